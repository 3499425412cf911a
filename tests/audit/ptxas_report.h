// SPDX-License-Identifier: Apache-2.0
// Parser for the ptxas -v resource report: one entry per (kernel, architecture), and one per
// (non-inlined device function, architecture): ptxas reports a called function's stack frame
// and spills on their own lines, after its kernel's, and counts its registers in the kernel's.
#pragma once

#include <istream>
#include <string>
#include <vector>

namespace vattn::audit {

struct KernelResources {
  std::string function, arch;
  bool kernel = true;  // false: a device function (no register line of its own)
  int registers = -1;
  long static_smem = 0, stack_frame = 0, spill_stores = 0, spill_loads = 0, lmem = 0;
};

std::vector<KernelResources> parse_ptxas_report(std::istream& in);

// Problems of one entry against the sm_120 budget ("" when clean).
std::string audit_entry(const KernelResources& k, long dynamic_smem, long smem_limit = 101376);

}  // namespace vattn::audit
