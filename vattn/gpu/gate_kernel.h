// SPDX-License-Identifier: Apache-2.0
// A kernel that holds a stream busy for a set wall-clock time, so a test can tell whether a
// host call returned at once or waited for the stream (a hidden synchronisation or a
// synchronous copy inside a revision's run()).
#pragma once

#include <cuda_runtime_api.h>

namespace vattn {

// Enqueues one single-thread block that spins for `microseconds` of device wall time
// (%globaltimer, immune to clock scaling). Returns the launch error, if any.
cudaError_t launch_gate(cudaStream_t stream, unsigned long long microseconds);

}  // namespace vattn
