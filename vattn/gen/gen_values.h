// SPDX-License-Identifier: Apache-2.0
// Value profiles: what the numbers in q, kv_pool and kv_draft look like. Each profile writes
// rows on request, token by token in a fixed order, from its own random streams.
#pragma once

#include <cstdint>
#include <memory>

#include "vattn/case/case.h"
#include "vattn/gen/gen_layout.h"
#include "vattn/gen/gen_rng.h"
#include "vattn/gen/gen_rows.h"
#include "vattn/gen/generate.h"
#include "vattn/recipe/vocab.h"

namespace vattn::gen {

using vocab::kLatentDims;
using vocab::kRopeDims;
using vocab::kRowDims;

class ValueProfile {
 public:
  virtual ~ValueProfile() = default;
  // KV row of prefix token p of request b; its position is p.
  virtual void prefix_row(int b, int p, uint16_t* row) = 0;
  // KV row of draft node i of request b at position pos (P_b + depth).
  virtual void draft_row(int b, int i, int pos, uint16_t* row) = 0;
  // Query of draft node i, head h.
  virtual void query_row(int b, int i, int pos, int h, uint16_t* row) = 0;
  // A pool row nobody references (written only when the case is not poisoned).
  virtual void filler_row(uint16_t* row) = 0;
  // Edits that need the whole case, such as exact duplicates; runs before poisoning.
  virtual void finish(Case& /*c*/, const PoolLayout& /*layout*/) {}
};

// Shared plumbing: one stream per tensor, so the pool's values do not depend on how many
// queries were drawn before them.
enum Stream : uint64_t { kPoolStream = 1, kDraftStream, kQueryStream, kFillStream, kSetupStream };

class StreamedProfile : public ValueProfile {
 protected:
  explicit StreamedProfile(const Recipe& r)
      : pool_(r.seed, kPoolStream), draft_(r.seed, kDraftStream), query_(r.seed, kQueryStream),
        fill_(r.seed, kFillStream), setup_(r.seed, kSetupStream) {}
  Rng pool_, draft_, query_, fill_, setup_;
};

std::unique_ptr<ValueProfile> make_profile(const Recipe& r);

// The profile modelled on a real Kimi K2.6 latent cache (gen_k26.cpp).
std::unique_ptr<ValueProfile> make_k26_profile(const Recipe& r);

}  // namespace vattn::gen
