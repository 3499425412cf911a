// SPDX-License-Identifier: Apache-2.0
// vattn_read_bench FILE...: what isolating the HDF5 reader costs. Reads every case of each file
// twice, in this process (CaseFileCursor) and through the isolated child (IsolatedCaseReader,
// what `vattn info` and `vattn replay` use), best of 3 each, and prints the seconds, the data
// rate and the overhead. Peak memory: run it under /usr/bin/time -v.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "vattn/casefile/case_file.h"
#include "vattn/casefile/isolated_reader.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

size_t case_bytes(const vattn::Case& c) {
  size_t n = 2 * (c.q.size() + c.kv_pool.size() + c.kv_draft.size()) + 4 * c.kv_indices.size() + c.draft_mask.size();
  for (const auto& o : c.outputs) n += 4 * (o.out.size() + o.lse.size());
  return n;
}

double in_process(const std::string& path, size_t* cases, size_t* bytes) {
  const auto t0 = std::chrono::steady_clock::now();
  const vattn::CaseFileCursor cursor(path);
  *cases = 0;
  *bytes = 0;
  for (const std::string& name : cursor.names()) {
    const vattn::Case c = cursor.read(name, true);
    ++*cases;
    *bytes += case_bytes(c);
  }
  return seconds_since(t0);
}

double isolated(const std::string& path) {
  const auto t0 = std::chrono::steady_clock::now();
  vattn::IsolatedCaseReader reader(path, "");
  vattn::Case c;
  while (reader.next(c)) {
  }
  return seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help") {
    std::printf(
        "usage: vattn_read_bench FILE...\n  reads each case file in this process and through the isolated reader "
        "(best of 3 each) and prints the cost of the isolation\n");
    return argc < 2 ? 2 : 0;
  }
  std::printf("%-40s %6s %10s %12s %12s %9s\n", "file", "cases", "MiB", "in-process s", "isolated s", "overhead");
  for (int i = 1; i < argc; ++i) {
    try {
      size_t cases = 0, bytes = 0;
      double a = 1e30, b = 1e30;
      for (int rep = 0; rep < 3; ++rep) {
        a = std::min(a, in_process(argv[i], &cases, &bytes));
        b = std::min(b, isolated(argv[i]));
      }
      std::printf("%-40s %6zu %10.1f %12.3f %12.3f %8.0f%%\n", argv[i], cases, static_cast<double>(bytes) / (1 << 20),
                  a, b, 100.0 * (b - a) / std::max(a, 1e-9));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "vattn_read_bench: %s\n", e.what());
      return 2;
    }
  }
  return 0;
}
