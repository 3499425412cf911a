// SPDX-License-Identifier: Apache-2.0
// A small, complete pass over the kernel's code paths (direct write, partials + reduce,
// empty splits, draft tiles with masked non-finite V, padded rows, device refusals) sized
// for compute-sanitizer: `bash scripts/device/run.sh --sanitize` runs this tag under
// memcheck (with --padding), racecheck, initcheck and synccheck.
#include <catch2/catch.hpp>

#include "tests/gpu/gpu_testbed.h"

TEST_CASE("sanitizer set: every kernel path on small cases", "[gpu][kernel][sanitize]") {
  for (const char* line :
       {"B=3 H=8 P=[0,99,33] T=[1,17,40] tree=padded profile=adversarial layout=sparse poison=1 seed=81",
        "B=1 H=128 P=[65] T=[3] tree=chain profile=uniform layout=scattered poison=0 seed=82",
        "B=2 H=1 P=[70,0] T=[33,2] tree=random profile=k26 layout=reversed poison=1 seed=83"}) {
    const vattn::Case c = vattn::test::make_case(line);
    vattn::test::require_all_pass(vattn::test::check_vs_cpu(c, {0, 1, 2, 9}), c);
  }
}
