// SPDX-License-Identifier: Apache-2.0
// Deterministic random numbers for the case generators.
// A recipe must give bit-identical tensors on every machine, and the std:: distributions are
// implementation-defined, so everything here is SplitMix64 plus IEEE basic operations
// (+ - * / sqrt, all correctly rounded). No libm transcendental is used either: sincos_det
// is a fixed polynomial evaluated in a fixed order.
#pragma once

#include <cmath>
#include <cstdint>

namespace vattn::gen {

constexpr uint64_t splitmix_finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Independent streams per purpose (tree of request b, pool values, queries, ...), so that
// changing one part of a recipe (the layout, say) leaves the other tensors unchanged.
class Rng {
 public:
  Rng(uint64_t seed, uint64_t stream)
      : state_(splitmix_finalize(seed ^ splitmix_finalize(stream + 0x632be59bd9b4e019ull))) {}

  uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ull;
    return splitmix_finalize(state_);
  }
  // [0, 1) with 53 random bits.
  double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform01(); }
  // [0, n); the modulo bias (n / 2^64) is far below anything a test can see.
  uint64_t below(uint64_t n) { return n == 0 ? 0 : next() % n; }
  bool chance(double p) { return uniform01() < p; }
  // Mean 0, variance 1, bounded by +-2*sqrt(3): the Irwin-Hall sum of four 16-bit uniforms
  // from one draw. Close enough to a normal for activations (16 bits is plenty before rounding
  // to bf16's 8), and free of log/cos.
  double normalish() {
    const uint64_t v = next();
    const double s = static_cast<double>((v >> 48) + ((v >> 32) & 0xffff) + ((v >> 16) & 0xffff) + (v & 0xffff));
    return ((s + 2.0) * 0x1.0p-16 - 2.0) * 1.7320508075688772;
  }
  // Two uniforms in (-1, 1) from one draw, exact in float (24-bit grid): the bulk path.
  void uniform_pm1_pair(float& x, float& y) {
    const uint64_t v = next();
    x = static_cast<float>((v >> 40) & 0xffffffull) * 0x1.0p-23f - 1.0f;
    y = static_cast<float>((v >> 8) & 0xffffffull) * 0x1.0p-23f - 1.0f;
  }

 private:
  uint64_t state_;
};

inline uint64_t sub_seed(uint64_t seed, uint64_t stream, uint64_t index) {
  return splitmix_finalize(seed ^ splitmix_finalize(stream * 0x100000001b3ull + index));
}

// sin and cos of x from a Cody-Waite reduction by pi/2 and Taylor polynomials on [-pi/4, pi/4].
// Accurate to a few ulp for |x| < 2^20 (all positions the generators use), and bit-for-bit
// reproducible because it uses only basic operations.
inline void sincos_det(double x, double& s, double& c) {
  constexpr double kTwoOverPi = 0.63661977236758134308;
  constexpr double kPio2Hi = 1.57079632673412561417e+00;  // 33 significant bits: k * kPio2Hi is exact
  constexpr double kPio2Lo = 6.07710050650619224932e-11;
  const double k = std::floor(x * kTwoOverPi + 0.5);
  const double r = (x - k * kPio2Hi) - k * kPio2Lo;
  const double r2 = r * r;
  const double sr =
      r * (1.0 + r2 * (-1.0 / 6 +
                       r2 * (1.0 / 120 +
                             r2 * (-1.0 / 5040 + r2 * (1.0 / 362880 + r2 * (-1.0 / 39916800 +
                                                                            r2 * (1.0 / 6227020800.0 +
                                                                                  r2 * (-1.0 / 1307674368000.0))))))));
  const double cr =
      1.0 + r2 * (-0.5 + r2 * (1.0 / 24 +
                               r2 * (-1.0 / 720 +
                                     r2 * (1.0 / 40320 + r2 * (-1.0 / 3628800 + r2 * (1.0 / 479001600.0 +
                                                                                      r2 * (-1.0 / 87178291200.0)))))));
  const int64_t quadrant = static_cast<int64_t>(k) & 3;
  switch (quadrant) {
    case 0:
      s = sr;
      c = cr;
      break;
    case 1:
      s = cr;
      c = -sr;
      break;
    case 2:
      s = -sr;
      c = -cr;
      break;
    default:
      s = -cr;
      c = sr;
      break;
  }
}

}  // namespace vattn::gen
