// SPDX-License-Identifier: Apache-2.0
// The simple value profiles (uniform, ties, tiny, huge, adversarial) and the profile factory.
// The k26 profile, which models a real latent cache, lives in gen_k26.cpp.
#include "vattn/gen/gen_values.h"

#include <algorithm>
#include <cstddef>
#include <set>
#include <utility>

#include "vattn/case/bf16.h"
#include "vattn/gen/gen_rng.h"
#include "vattn/gen/gen_rows.h"

namespace vattn::gen {

namespace {

class UniformProfile : public StreamedProfile {
 public:
  explicit UniformProfile(const Recipe& r) : StreamedProfile(r) {}
  void prefix_row(int, int, uint16_t* row) override { fill_uniform(pool_, row, kRowDims); }
  void draft_row(int, int, int, uint16_t* row) override { fill_uniform(draft_, row, kRowDims); }
  void query_row(int, int, int, int, uint16_t* row) override { fill_uniform(query_, row, kRowDims); }
  void filler_row(uint16_t* row) override { fill_uniform(fill_, row, kRowDims); }
};

// Many identical keys: every KV row is one of three distinct rows, so logits tie exactly.
class TiesProfile : public StreamedProfile {
 public:
  explicit TiesProfile(const Recipe& r) : StreamedProfile(r) {
    for (auto& d : distinct_) fill_uniform(setup_, d, kRowDims);
  }
  void prefix_row(int, int, uint16_t* row) override { copy(distinct_[pool_.below(3)], row); }
  void draft_row(int, int, int, uint16_t* row) override { copy(distinct_[draft_.below(3)], row); }
  void query_row(int, int, int, int, uint16_t* row) override { fill_uniform(query_, row, kRowDims); }
  void filler_row(uint16_t* row) override { fill_uniform(fill_, row, kRowDims); }

 private:
  static void copy(const uint16_t* from, uint16_t* to) { std::copy(from, from + kRowDims, to); }
  uint16_t distinct_[3][kRowDims];
};

// Magnitudes near the bottom of the bf16 range: keys/values ~1e-30, every eighth column in the
// subnormal range (below 2^-126); half the heads have tiny queries too, so their logits
// underflow to exactly 0 in float32 while float64 still resolves them.
class TinyProfile : public StreamedProfile {
 public:
  explicit TinyProfile(const Recipe& r) : StreamedProfile(r) {}
  void prefix_row(int, int, uint16_t* row) override { tiny_row(pool_, row); }
  void draft_row(int, int, int, uint16_t* row) override { tiny_row(draft_, row); }
  void query_row(int, int, int, int h, uint16_t* row) override {
    fill_uniform(query_, row, kRowDims, h % 2 ? 1e-30f : 1.0f);
  }
  void filler_row(uint16_t* row) override { tiny_row(fill_, row); }

 private:
  static void tiny_row(Rng& rng, uint16_t* row) {
    fill_uniform(rng, row, kRowDims, 1e-30f);
    for (int d = 7; d < kRowDims; d += 8) row[d] = float_to_bf16(static_cast<float>(rng.uniform(-1, 1) * 0x1.0p-130));
  }
};

// All logits large: every key is b*(s + noise) for one random sign vector s, and queries are
// +-(s + noise), so even heads see logits around +70 and odd heads around -70. A kernel that
// exponentiates without subtracting the running max overflows (or underflows to 0/0).
class HugeProfile : public StreamedProfile {
 public:
  explicit HugeProfile(const Recipe& r) : StreamedProfile(r), key_scale_(70.0 / (r.sm_scale * kRowDims)) {
    for (double& x : sign_) x = setup_.chance(0.5) ? 1.0 : -1.0;
  }
  void prefix_row(int, int, uint16_t* row) override { near_sign(pool_, key_scale_, row); }
  void draft_row(int, int, int, uint16_t* row) override { near_sign(draft_, key_scale_, row); }
  void query_row(int, int, int, int h, uint16_t* row) override { near_sign(query_, h % 2 ? -1.0 : 1.0, row); }
  void filler_row(uint16_t* row) override { near_sign(fill_, key_scale_, row); }

 private:
  void near_sign(Rng& rng, double scale, uint16_t* row) const {
    fill_near(rng, scale, sign_, -0.5, 0.5, row, kRowDims);
  }
  double key_scale_;
  double sign_[kRowDims];
};

// Edge cases at once: a few keys per request with logits near 84 (exp(88.7) overflows float32)
// on the even heads, exact ties (duplicated KV rows, draft rows, query rows and heads), and the
// generator poisons everything outside K(b,i).
class AdversarialProfile : public StreamedProfile {
 public:
  explicit AdversarialProfile(const Recipe& r) : StreamedProfile(r), big_(84.0 / (r.sm_scale * kRowDims)) {
    for (double& x : sign_) x = setup_.chance(0.5) ? 1.0 : -1.0;
    for (size_t b = 0; b < r.prefix.size(); ++b) {
      const int p = r.prefix[b];
      const int count = p == 0 ? 0 : 1 + static_cast<int>(setup_.below(3));
      for (int k = 0; k < count; ++k)
        huge_tokens_.insert({static_cast<int>(b), static_cast<int>(setup_.below(static_cast<uint64_t>(p)))});
    }
  }
  void prefix_row(int b, int p, uint16_t* row) override {
    if (huge_tokens_.count({b, p})) {
      huge_row(pool_, row);
    } else {
      fill_uniform(pool_, row, kRowDims);
    }
  }
  void draft_row(int b, int i, int, uint16_t* row) override {
    if (i == 0 && b % 2 == 0) {
      huge_row(draft_, row);
    } else {
      fill_uniform(draft_, row, kRowDims);
    }
  }
  void query_row(int, int, int, int h, uint16_t* row) override {
    if (h % 2) {
      fill_uniform(query_, row, kRowDims);
      return;
    }
    for (int d = 0; d < kRowDims; ++d) row[d] = double_to_bf16(sign_[d] + query_.uniform(-0.25, 0.25));
  }
  void filler_row(uint16_t* row) override { fill_uniform(fill_, row, kRowDims); }

  void finish(Case& c, const PoolLayout& L) override {
    const size_t dqk = static_cast<size_t>(c.d_qk), H = static_cast<size_t>(c.num_heads);
    const auto row_copy = [dqk](std::vector<uint16_t>& t, size_t from, size_t to) {
      std::copy(t.begin() + static_cast<std::ptrdiff_t>(from * dqk),
                t.begin() + static_cast<std::ptrdiff_t>((from + 1) * dqk),
                t.begin() + static_cast<std::ptrdiff_t>(to * dqk));
    };
    for (int b = 0; b < c.num_requests(); ++b) {
      const size_t t0 = static_cast<size_t>(c.kv_indptr[b]);
      const int P = c.prefix_len(b), T = c.drafts(b);
      if (P >= 2)
        row_copy(c.kv_pool, static_cast<size_t>(L.row_of_token[t0]), static_cast<size_t>(L.row_of_token[t0 + P - 1]));
      if (P >= 4)
        row_copy(c.kv_pool, static_cast<size_t>(L.row_of_token[t0 + 1]), static_cast<size_t>(L.row_of_token[t0 + 2]));
      const size_t q0 = static_cast<size_t>(c.qo_indptr[b]);
      if (T >= 3) row_copy(c.kv_draft, q0 + 1, q0 + 2);
      if (T >= 2) {  // two draft nodes asking the same question of different key sets
        std::copy(c.q.begin() + static_cast<std::ptrdiff_t>(q0 * H * dqk),
                  c.q.begin() + static_cast<std::ptrdiff_t>((q0 + 1) * H * dqk),
                  c.q.begin() + static_cast<std::ptrdiff_t>((q0 + 1) * H * dqk));
      }
    }
    if (H >= 3) {  // head 2 repeats head 0 (both even: the huge-logit heads)
      for (int64_t i = 0; i < c.n_q(); ++i) {
        const auto base = static_cast<std::ptrdiff_t>(static_cast<size_t>(i) * H * dqk);
        std::copy(c.q.begin() + base, c.q.begin() + base + static_cast<std::ptrdiff_t>(dqk),
                  c.q.begin() + base + static_cast<std::ptrdiff_t>(2 * dqk));
      }
    }
  }

 private:
  void huge_row(Rng& rng, uint16_t* row) const { fill_near(rng, big_, sign_, -1.0 / 64, 1.0 / 64, row, kRowDims); }
  double big_;
  double sign_[kRowDims];
  std::set<std::pair<int, int>> huge_tokens_;
};

}  // namespace

std::unique_ptr<ValueProfile> make_profile(const Recipe& r) {
  if (r.profile == "uniform") return std::make_unique<UniformProfile>(r);
  if (r.profile == "k26") return make_k26_profile(r);
  if (r.profile == "adversarial") return std::make_unique<AdversarialProfile>(r);
  if (r.profile == "huge") return std::make_unique<HugeProfile>(r);
  if (r.profile == "ties") return std::make_unique<TiesProfile>(r);
  if (r.profile == "tiny") return std::make_unique<TinyProfile>(r);
  throw InputError("", "", "profile", "unknown profile '" + r.profile + "'");
}

}  // namespace vattn::gen
