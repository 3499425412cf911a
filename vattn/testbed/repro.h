// SPDX-License-Identifier: Apache-2.0
// The evidence of a failure: one HDF5 repro file (docs/case-format.md) holding the case's inputs,
// the oracle's output and the result under test, so `vattn replay FILE` fails where it failed.
// The one writer every entry point uses (GPU tests, the fuzz worker's targets).
#pragma once

#include <string>
#include <vector>

#include "vattn/case/case.h"
#include "vattn/oracle/cpu_oracle.h"

namespace vattn::testbed {

// Writes to `path`: the case's inputs (case name "repro"), the oracle's output when `ref` holds
// one (stored as oracle_fp64 when it is the float64 oracle, else as the named producer) and, when
// given, the result under test as "kernel:<target>" ('/' in the target becomes '_': a producer
// name may not hold '/'). File source "fuzz:<target>"; the notes say who wrote it, the recipe and
// `note`. Written as write_case_file writes (a fresh temporary renamed into place); a `path` that
// is a symbolic link is refused, never written through. Throws on write errors.
void write_repro_file(const Case& c, const std::string& path, const std::string& target, const Reference* ref,
                      const std::string& oracle, const std::vector<float>* out, const std::vector<float>* lse,
                      const std::string& note, const std::string& written_by = "vattn fuzz");

}  // namespace vattn::testbed
