// SPDX-License-Identifier: Apache-2.0
// Row fillers, multiversioned. GCC vectorizes these loops with AVX-512's 64-bit multiply
// (SplitMix64 is a counter-based generator, so eight draws proceed at once), about 2x faster
// per long case than the x86-64 baseline; the baseline clone serves CPUs without AVX-512.
// Same bits either way: the loops use only correctly rounded basic operations, and this
// library is compiled with -ffp-contract=off, so no clone may fuse a multiply and an add.
// (vattn/fuzz/gen/bench_generation.cpp prints a digest of every value made to show it.)
#include "vattn/gen/gen_rows.h"

#include "vattn/case/bf16.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(VATTN_NO_CLONES)
#define VATTN_GEN_CLONES __attribute__((target_clones("arch=x86-64-v4", "default")))
#else
#define VATTN_GEN_CLONES
#endif

namespace vattn::gen {

VATTN_GEN_CLONES void fill_uniform(Rng& rng, uint16_t* row, int n, float scale) {
  for (int d = 0; d + 1 < n; d += 2) {
    float x, y;
    rng.uniform_pm1_pair(x, y);
    row[d] = float_to_bf16(x * scale);
    row[d + 1] = float_to_bf16(y * scale);
  }
  if (n % 2) {
    float x, y;
    rng.uniform_pm1_pair(x, y);
    row[n - 1] = float_to_bf16(x * scale);
  }
}

VATTN_GEN_CLONES void fill_scaled_normalish(Rng& rng, const double* scale, uint16_t* row, int n) {
  for (int d = 0; d < n; ++d) row[d] = double_to_bf16(scale[d] * rng.normalish());
}

VATTN_GEN_CLONES void fill_near(Rng& rng, double scale, const double* centre, double lo, double hi, uint16_t* row,
                                int n) {
  for (int d = 0; d < n; ++d) row[d] = double_to_bf16(scale * (centre[d] + rng.uniform(lo, hi)));
}

VATTN_GEN_CLONES void fill_rope(double pos, const double* theta, const double* amp, const double* phase, uint16_t* row,
                                int pairs) {
  for (int i = 0; i < pairs; ++i) {
    double s, c;
    sincos_det(phase ? pos * theta[i] + phase[i] : pos * theta[i], s, c);
    row[2 * i] = double_to_bf16(amp[i] * c);
    row[2 * i + 1] = double_to_bf16(amp[i] * s);
  }
}

}  // namespace vattn::gen
