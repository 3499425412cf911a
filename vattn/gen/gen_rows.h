// SPDX-License-Identifier: Apache-2.0
// The generators' inner loops: one KV or query row of bf16 values from a random stream.
// They make nearly all of a long case's bytes, so each is compiled twice on x86-64 (AVX-512
// and the baseline) and picked at load time (see gen_rows.cpp); both give the same bits.
#pragma once

#include <cstdint>

#include "vattn/gen/gen_rng.h"

namespace vattn::gen {

// n values uniform in (-scale, scale), rounded to bf16.
void fill_uniform(Rng& rng, uint16_t* row, int n, float scale = 1.0f);
// row[d] = scale[d] * normalish(), d < n.
void fill_scaled_normalish(Rng& rng, const double* scale, uint16_t* row, int n);
// row[d] = scale * (centre[d] + uniform(lo, hi)), d < n.
void fill_near(Rng& rng, double scale, const double* centre, double lo, double hi, uint16_t* row, int n);
// RoPE pairs: (row[2i], row[2i+1]) = amp[i] * (cos, sin)(pos * theta[i] + phase[i]), i < pairs;
// phase may be null (no phase).
void fill_rope(double pos, const double* theta, const double* amp, const double* phase, uint16_t* row, int pairs);

}  // namespace vattn::gen
