// SPDX-License-Identifier: Apache-2.0
// The naive GPU oracle is itself checked against the CPU float64 oracle, tightly: its only
// error is float32 accumulation, orders of magnitude below the bf16 tolerance it serves.
#include <cmath>

#include <catch2/catch.hpp>

#include "tests/gpu/gpu_testbed.h"
#include "vattn/gpu/naive_runner.h"
#include "vattn/oracle/cpu_oracle.h"

TEST_CASE("naive GPU oracle agrees with the CPU float64 oracle", "[gpu][oracle][revision-independent]") {
  for (const char* line :
       {"B=3 H=8 P=[0,4099,65] T=[1,17,64] tree=random profile=uniform layout=scattered poison=1 seed=61",
        "B=1 H=16 P=[777] T=[33] tree=padded profile=k26 layout=sparse poison=1 seed=62",
        "B=2 H=1 P=[3,0] T=[5,7] tree=star profile=adversarial layout=sparse poison=1 seed=63",
        // several 2048-key chunks per row (and a request with fewer), merged in float64
        "B=2 H=2 P=[9001,2047] T=[3,2] tree=random profile=k26 layout=scattered poison=1 seed=64"}) {
    const vattn::Case c = vattn::test::make_case(line);
    const vattn::Reference r64 = vattn::oracle_fp64(c);
    vattn::DeviceCase dc(c);
    const vattn::Reference naive = vattn::naive_gpu_reference(dc);
    REQUIRE(naive.out.size() == r64.out.size());
    double worst = 0, norm = 0;
    int64_t nonfinite_mismatch = 0;
    for (size_t i = 0; i < r64.out.size(); ++i) {
      const double x = naive.out[i], y = r64.out[i];
      if (std::isfinite(x) != std::isfinite(y) || std::isnan(x) != std::isnan(y)) {
        ++nonfinite_mismatch;
        continue;
      }
      if (!std::isfinite(y)) continue;
      norm += y * y;
      // float32 accumulation: relative to the magnitudes summed, not to the (cancelling) result.
      worst = std::max(worst, std::abs(x - y) / (1e-5 * r64.abs_pv[i] + 1e-7));
    }
    double lse_worst = 0;
    for (size_t i = 0; i < r64.lse.size(); ++i) {
      const double x = naive.lse[i], y = r64.lse[i];
      if (std::isfinite(y) && std::isfinite(x))
        lse_worst = std::max(lse_worst, std::abs(x - y) / (1e-5 * (r64.lse_scale[i] + std::abs(y)) + 1e-6));
      else if (std::isnan(x) != std::isnan(y) || (!std::isnan(x) && x != y))
        ++nonfinite_mismatch;
    }
    std::printf("naive vs fp64: %s  worst err/bound %.3g  lse err/bound %.3g  nonfinite mismatches %lld\n", line, worst,
                lse_worst, static_cast<long long>(nonfinite_mismatch));
    CHECK(norm > 0);
    CHECK(nonfinite_mismatch == 0);
    CHECK(worst <= 1.0);
    CHECK(lse_worst <= 1.0);
  }
}
