// SPDX-License-Identifier: Apache-2.0
// Device helpers for `vattn bench`: fill buffers with deterministic pseudo-random bf16 on
// the device (host generation of a 1 GB pool would dominate the run), and the two ceilings
// every number is judged against, measured in the same run.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace vattn {

// bf16 values uniform in [-amp, amp), from a hash of (seed, index).
cudaError_t fill_bf16_random(uint16_t* dst, size_t count, uint64_t seed, float amp, cudaStream_t stream);

// Peak mma.sync bf16 m16n8k16 rate (TFLOP/s) with register-resident operands.
double measure_mma_tflops(int sms);
// Device-to-device copy bandwidth (GB/s), counting bytes read plus bytes written.
double measure_copy_gbps(size_t bytes);

}  // namespace vattn
