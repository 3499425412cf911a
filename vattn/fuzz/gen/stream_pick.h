// SPDX-License-Identifier: Apache-2.0
// The draws of the case stream's own families (serving, captured shapes) and run parameters
// (plan limits, SM counts). Integer arithmetic over SplitMix64 only, no libm: a (seed, index)
// must name the same case on every machine.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "vattn/gen/gen_rng.h"

namespace vattn::fuzz {

// An index into `weights` (positive, not all zero), drawn in proportion to them through
// `uniform(lo, hi)` (inclusive): shared by the stream's Pick and the RapidCheck generators' draws,
// whose random sources differ.
template <class Uniform>
size_t weighted_index(std::initializer_list<int> weights, Uniform&& uniform) {
  int64_t total = 0;
  for (int w : weights) total += w;
  int64_t x = uniform(int64_t{0}, total - 1);
  size_t i = 0;
  for (int w : weights) {
    if (x < w) return i;
    x -= w;
    ++i;
  }
  return weights.size() - 1;
}

class Pick {
 public:
  explicit Pick(uint64_t seed) : rng_(seed, 0) {}
  uint64_t next() { return rng_.next(); }
  // Inclusive; lo <= hi.
  int64_t in(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng_.below(static_cast<uint64_t>(hi - lo) + 1));
  }
  bool percent(int p) { return in(0, 99) < p; }
  // Log-uniform by octaves over [lo, hi] (1 <= lo <= hi): an octave [2^e, 2^(e+1)) drawn
  // uniformly, then a value inside it, so 512..1023 is as likely as 131072..262143.
  int64_t octave(int64_t lo, int64_t hi) {
    int elo = 0, ehi = 0;
    while ((int64_t{2} << elo) <= lo) ++elo;
    while ((int64_t{2} << ehi) <= hi) ++ehi;
    const int e = static_cast<int>(in(elo, ehi));
    const int64_t a = std::max(lo, int64_t{1} << e), b = std::min(hi, (int64_t{2} << e) - 1);
    return in(a, b);
  }
  // An index into `weights`, drawn in proportion to them (positive, not all zero).
  size_t weighted(std::initializer_list<int> weights) {
    return weighted_index(weights, [this](int64_t lo, int64_t hi) { return in(lo, hi); });
  }
  template <class T>
  const T& of(const std::vector<T>& v) {
    return v[static_cast<size_t>(in(0, static_cast<int64_t>(v.size()) - 1))];
  }

 private:
  gen::Rng rng_;
};

}  // namespace vattn::fuzz
