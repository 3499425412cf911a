// SPDX-License-Identifier: Apache-2.0
// Long contexts, where the CPU oracle is slow: the kernel against the naive GPU oracle.
#include <catch2/catch.hpp>

#include "tests/gpu/gpu_testbed.h"

TEST_CASE("long prefixes against the naive GPU oracle", "[gpu][kernel][long]") {
  for (const char* line :
       {"B=1 H=8 P=[65536] T=[16] tree=chain profile=k26 layout=scattered poison=0 seed=51",
        "B=2 H=8 P=[131072,4099] T=[16,64] tree=random profile=k26 layout=scattered poison=1 seed=52",
        "B=1 H=8 P=[262144] T=[16] tree=ddtree profile=k26 layout=scattered poison=0 seed=53"}) {
    const vattn::Case c = vattn::test::make_case(line);
    std::printf("%s\n", c.describe().c_str());
    vattn::test::require_all_pass(vattn::test::check_vs_naive_gpu(c, {0, 1, 13}), c);
  }
}
