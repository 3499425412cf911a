// SPDX-License-Identifier: Apache-2.0
// Kernel revisions by name (built into the suite) or by path (a shared library exporting
// vattn_get_revision_v1), so an old or foreign revision can be tested without a rebuild.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/vattn_abi.h"

namespace vattn {

struct Revision {
  const vattn_revision* api = nullptr;
  // The test-only plan hook (kernels/vattn_abi.h): linked for the in-tree revisions, looked up
  // in a library (vattn_test_plan_for_v1; planted variants and mutants, built from the in-tree
  // sources, have it); null when the revision has none. Set through testbed::ScopedPlan.
  vattn_test_plan_for_fn plan_for = nullptr;
  std::string origin;             // "built-in" or the library path
  std::shared_ptr<void> library;  // keeps a loaded library open
  std::string name() const { return api ? api->name : "?"; }
  std::string describe() const { return "'" + name() + "' (" + origin + ")"; }  // for messages
};

std::vector<std::string> builtin_revision_names();

// A built-in name (kernels/vattn_revisions.h) or a path containing '/' or ending in ".so".
// Throws InputError (field "--kernel") for an unknown name, a library that does not load, lacks
// the symbol, or speaks another ABI version. A library without the plan hook loads (plan_for null).
Revision load_revision(const std::string& name_or_path);

}  // namespace vattn
