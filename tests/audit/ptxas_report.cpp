// SPDX-License-Identifier: Apache-2.0
#include "tests/audit/ptxas_report.h"

#include <regex>

namespace vattn::audit {

namespace {
long number_before(const std::string& line, const std::string& unit) {
  const std::regex re("([0-9]+) " + unit);
  std::smatch m;
  return std::regex_search(line, m, re) ? std::stol(m[1]) : 0;
}
}  // namespace

std::vector<KernelResources> parse_ptxas_report(std::istream& in) {
  std::vector<KernelResources> out;
  const std::regex entry(R"(Compiling entry function '([^']+)' for '([^']+)')");
  const std::regex properties(R"(Function properties for (\S+))");
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, entry)) {
      KernelResources k;
      k.function = m[1];
      k.arch = m[2];
      out.push_back(k);
      continue;
    }
    if (out.empty()) continue;
    if (std::regex_search(line, m, properties) && m[1] != out.back().function) {
      // A device function of the last kernel: its stack frame and spills are its own.
      KernelResources f;
      f.function = m[1];
      f.arch = out.back().arch;
      f.kernel = false;
      out.push_back(f);
      continue;
    }
    KernelResources& k = out.back();
    if (line.find("bytes stack frame") != std::string::npos) {
      k.stack_frame = number_before(line, "bytes stack frame");
      k.spill_stores = number_before(line, "bytes spill stores");
      k.spill_loads = number_before(line, "bytes spill loads");
    } else if (line.find("Used ") != std::string::npos && line.find("registers") != std::string::npos) {
      k.registers = static_cast<int>(number_before(line, "registers"));
      k.static_smem = number_before(line, "bytes smem");
      k.lmem = number_before(line, "bytes lmem");
    }
  }
  return out;
}

std::string audit_entry(const KernelResources& k, long dynamic_smem, long smem_limit) {
  std::string p;
  if (k.kernel && k.registers < 0) p += "no register line; ";
  if (k.spill_stores || k.spill_loads)
    p += "spills (" + std::to_string(k.spill_stores) + " B stores, " + std::to_string(k.spill_loads) + " B loads); ";
  if (k.stack_frame) p += "stack frame of " + std::to_string(k.stack_frame) + " B (local memory); ";
  if (k.lmem) p += std::to_string(k.lmem) + " B lmem; ";
  if (k.static_smem + dynamic_smem > smem_limit)
    p += "shared memory " + std::to_string(k.static_smem) + " static + " + std::to_string(dynamic_smem) +
         " dynamic > " + std::to_string(smem_limit) + " B; ";
  return p;
}

}  // namespace vattn::audit
