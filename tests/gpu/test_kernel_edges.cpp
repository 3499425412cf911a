// SPDX-License-Identifier: Apache-2.0
// The edge-case table: the kernel against the CPU float64 oracle under the tolerance model.
// Sizes sit on tile edges and primes (tiles are 32 keys and 32 query rows); every run
// poisons outputs and workspace with NaN and checks the guard bands of every buffer.
#include <catch2/catch.hpp>

#include "tests/gpu/gpu_testbed.h"

using vattn::test::check_vs_cpu;
using vattn::test::make_case;
using vattn::test::require_all_pass;

namespace {
// Forced split counts: 0 lets the kernel pick; 256 is the revision's maximum; 7 on short
// prefixes is more splits than there are tiles, so some splits are empty.
const std::vector<int> kSplits = {0, 1, 2, 3, 7, 256};

void run_table(const std::vector<std::string>& recipes, const std::vector<int>& splits) {
  for (const auto& line : recipes) {
    const vattn::Case c = make_case(line);
    std::printf("%s\n", c.describe().c_str());
    require_all_pass(check_vs_cpu(c, splits), c);
  }
}
}  // namespace

TEST_CASE("prefix lengths on tile edges", "[gpu][kernel][edges]") {
  run_table({"B=1 H=8 P=[0] T=[16] tree=chain profile=uniform layout=scattered poison=0 seed=11",
             "B=1 H=8 P=[1] T=[16] tree=chain profile=uniform layout=scattered poison=0 seed=12",
             "B=1 H=8 P=[63] T=[16] tree=random profile=uniform layout=scattered poison=0 seed=13",
             "B=1 H=8 P=[64] T=[16] tree=random profile=k26 layout=scattered poison=0 seed=14",
             "B=1 H=8 P=[65] T=[16] tree=random profile=k26 layout=contiguous poison=0 seed=15",
             "B=1 H=8 P=[4099] T=[16] tree=chain profile=k26 layout=scattered poison=0 seed=16"},
            kSplits);
}

TEST_CASE("draft counts on tile edges, up to 1025", "[gpu][kernel][edges]") {
  run_table({"B=1 H=8 P=[65] T=[1] tree=chain profile=uniform layout=scattered poison=0 seed=21",
             "B=1 H=8 P=[65] T=[2] tree=chain profile=uniform layout=scattered poison=0 seed=22",
             "B=1 H=8 P=[65] T=[16] tree=star profile=uniform layout=scattered poison=0 seed=23",
             "B=1 H=8 P=[65] T=[17] tree=random profile=uniform layout=scattered poison=0 seed=24",
             "B=1 H=8 P=[65] T=[64] tree=ddtree profile=k26 layout=scattered poison=0 seed=25",
             "B=1 H=8 P=[65] T=[65] tree=wide profile=k26 layout=scattered poison=0 seed=26",
             "B=1 H=1 P=[77] T=[1025] tree=ddtree profile=uniform layout=scattered poison=0 seed=27"},
            {0, 1, 3, 7});
}

TEST_CASE("head counts 1, 8, 16, 128", "[gpu][kernel][edges]") {
  run_table({"B=1 H=1 P=[77] T=[17] tree=random profile=uniform layout=scattered poison=0 seed=31",
             "B=1 H=8 P=[77] T=[17] tree=random profile=uniform layout=scattered poison=0 seed=32",
             "B=1 H=16 P=[77] T=[17] tree=star profile=k26 layout=scattered poison=0 seed=33",
             "B=1 H=128 P=[77] T=[5] tree=chain profile=uniform layout=scattered poison=0 seed=34"},
            {0, 1, 2, 7});
}

TEST_CASE("trees, padded rows, poisoned pools, batches", "[gpu][kernel][edges]") {
  run_table({"B=1 H=8 P=[100] T=[40] tree=padded profile=uniform layout=sparse poison=1 seed=41",
             "B=3 H=8 P=[0,4099,65] T=[1,17,64] tree=random profile=uniform layout=scattered poison=1 seed=42",
             "B=2 H=8 P=[0,33] T=[20,9] tree=padded profile=adversarial layout=sparse poison=1 seed=43",
             "B=2 H=8 P=[200,31] T=[12,33] tree=deep profile=huge layout=reversed poison=0 seed=44",
             "B=2 H=8 P=[96,96] T=[16,16] tree=chain profile=ties layout=contiguous poison=0 seed=45",
             "B=1 H=8 P=[130] T=[16] tree=random profile=tiny layout=scattered poison=0 seed=46"},
            kSplits);
}
