// SPDX-License-Identifier: Apache-2.0
#include "vattn/gpu/revision.h"

#include <dlfcn.h>

#include "kernels/vattn_revisions.h"
#include "vattn/case/case.h"

extern "C" const vattn_revision* vattn_revision_split_v1(void);
extern "C" const vattn_revision* vattn_revision_split_v2(void);
extern "C" vattn_status vattn_revision_split_v1_test_plan_for(int sms, int blocks_per_sm);
extern "C" vattn_status vattn_revision_split_v2_test_plan_for(int sms, int blocks_per_sm);

namespace vattn {

std::vector<std::string> builtin_revision_names() { return {VATTN_REVISION_NAMES}; }

Revision load_revision(const std::string& spec) {
  Revision r;
  const bool is_path =
      spec.find('/') != std::string::npos || (spec.size() > 3 && spec.substr(spec.size() - 3) == ".so");
  if (!is_path) {
    if (spec == VATTN_REVISION_SPLIT_V1 || spec == VATTN_REVISION_SPLIT_V2) {
      const bool v1 = spec == VATTN_REVISION_SPLIT_V1;
      r.api = v1 ? vattn_revision_split_v1() : vattn_revision_split_v2();
      r.plan_for = v1 ? vattn_revision_split_v1_test_plan_for : vattn_revision_split_v2_test_plan_for;
      r.origin = "built-in";
      return r;
    }
    std::string known;
    for (const auto& n : builtin_revision_names()) known += (known.empty() ? "" : ", ") + n;
    throw InputError(
        "", "", "--kernel",
        "unknown revision '" + spec + "' (built in: " + known + "; or give a path to a revision library .so)");
  }
  // A bare file name is the file here: dlopen would search the system's library paths for it, so
  // `--kernel mine.so` would miss ./mine.so, or load another library of that name.
  const std::string file = spec.find('/') == std::string::npos ? "./" + spec : spec;
  void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw InputError(spec, "", "--kernel", std::string("cannot load revision library: ") + dlerror());
  r.library = std::shared_ptr<void>(h, [](void* p) { dlclose(p); });
  auto fn = reinterpret_cast<vattn_get_revision_fn>(dlsym(h, VATTN_GET_REVISION_SYMBOL));
  if (!fn) throw InputError(spec, "", "--kernel", "library does not export " VATTN_GET_REVISION_SYMBOL);
  r.api = fn();
  if (!r.api || r.api->abi_version != VATTN_ABI_VERSION || !r.api->run || !r.api->workspace_size ||
      !r.api->capabilities) {
    throw InputError(spec, "", "--kernel",
                     "revision speaks ABI version " + std::to_string(r.api ? r.api->abi_version : -1) +
                         ", the suite speaks " + std::to_string(VATTN_ABI_VERSION));
  }
  r.plan_for = reinterpret_cast<vattn_test_plan_for_fn>(dlsym(h, VATTN_TEST_PLAN_FOR_SYMBOL));  // optional
  r.origin = spec;
  return r;
}

}  // namespace vattn
