// SPDX-License-Identifier: Apache-2.0
// bf16 on the host: raw 16-bit patterns, converted with round-to-nearest-even.
// Case files carry bf16 as uint16 bits (HDF5 and numpy have no bf16 type), so the whole
// host side works on bits and converts at the edges.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace vattn {

inline float bf16_to_float(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Round-to-nearest-even, NaN kept NaN (quietened) rather than rounded into Inf.
inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) {
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  }
  const uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return static_cast<uint16_t>(u >> 16);
}

inline float round_to_bf16(float f) { return bf16_to_float(float_to_bf16(f)); }

// Double goes through float first; the double->float step can double-round, which is
// below the bf16 tolerance by 2^-16 relative and never matters for the checks here.
inline uint16_t double_to_bf16(double d) { return float_to_bf16(static_cast<float>(d)); }

constexpr uint16_t kBf16QuietNaN = 0x7fc0;
constexpr uint16_t kBf16PosInf = 0x7f80;
constexpr uint16_t kBf16NegInf = 0xff80;

}  // namespace vattn
