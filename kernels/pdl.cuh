// SPDX-License-Identifier: Apache-2.0
// Programmatic dependent launch (PDL) between the three kernels of a call, in revisions whose
// Traits::kPdl is set (split-v2). The one instruction family beyond sm_80's the kernels use: griddepcontrol, which
// both targets have (sm_90 and sm_120; PTX ISA 7.8). A kernel launched with the programmatic
// stream-serialization attribute may start while the kernel before it still runs; it must call
// pdl_wait() before it reads anything that kernel writes (wait returns once the earlier grid
// has completed and its memory is visible). pdl_launch_dependents() lets the next kernel's
// blocks be scheduled early. Without kPdl both are no-ops and the launches are plain.
#pragma once

#include "split_params.h"  // VATTN_KERN_NS

namespace vattn::VATTN_KERN_NS {

__device__ __forceinline__ void pdl_wait() {
  if constexpr (Traits::kPdl) asm volatile("griddepcontrol.wait;\n" ::: "memory");
}

__device__ __forceinline__ void pdl_launch_dependents() {
  if constexpr (Traits::kPdl) asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

}  // namespace vattn::VATTN_KERN_NS
