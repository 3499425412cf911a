// SPDX-License-Identifier: Apache-2.0
// The k26 profile: numbers shaped like a Kimi K2.6 / DeepSeek-V3 absorbed-MLA latent cache.
// - latent part (512 columns): per-channel scales around 1 and a few outlier channels 10-30x
//   larger (the normalised compressed KV has such channels); queries are small there.
// - an attention sink: prefix token 0 of every request holds a key aligned with a direction
//   every query shares, sized so that it takes roughly 70% of the probability at any length.
// - RoPE part (last 64 columns): pairs (cos, sin)(position * theta_i) with geometric
//   frequencies theta_i = 10000^(-i/32); queries carry a per-head phase, so the rope logit
//   depends on the query-key distance as in a real model.
#include <cstdint>

#include "vattn/case/bf16.h"
#include "vattn/gen/gen_rng.h"
#include "vattn/gen/gen_values.h"

namespace vattn::gen {

namespace {

constexpr int kPairs = kRopeDims / 2;
constexpr int kOutliers = 8;

class K26Profile : public StreamedProfile {
 public:
  explicit K26Profile(const Recipe& r) : StreamedProfile(r), heads_(r.heads) {
    for (double& s : chan_scale_) s = 0.5 + setup_.uniform01();
    for (int k = 0; k < kOutliers; ++k) {
      const auto ch = static_cast<int>(setup_.below(kLatentDims));
      chan_scale_[ch] = 10.0 + 20.0 * setup_.uniform01();
      outlier_[ch] = true;
    }
    double norm2 = 0;
    for (int d = 0; d < kLatentDims; ++d) {
      sink_dir_[d] = outlier_[d] ? 0.0 : setup_.normalish();
      norm2 += sink_dir_[d] * sink_dir_[d];
    }
    // 10000^(1/32) by five square roots: correctly rounded, unlike pow().
    double ratio = 10000.0;
    for (int k = 0; k < 5; ++k) ratio = std::sqrt(ratio);
    theta_[0] = 1.0;
    for (int i = 1; i < kPairs; ++i) theta_[i] = theta_[i - 1] / ratio;
    for (double& a : rope_amp_) a = 0.5 + 2.5 * setup_.uniform01();
    head_.resize(static_cast<size_t>(heads_));
    double alpha_sum = 0;
    for (auto& h : head_) {
      h.alpha = 0.25 + 0.25 * setup_.uniform01();
      alpha_sum += h.alpha;
      for (int i = 0; i < kPairs; ++i) {
        h.rope_amp[i] = 0.5 + 1.5 * setup_.uniform01();
        h.phase[i] = 6.283185307179586 * setup_.uniform01();
      }
    }
    // Sink logit for a head of average alpha: 4 + 0.6 * bit_length(P_b), which keeps the
    // sink's share near 70% whether the prefix holds 100 or 262144 tokens.
    unit_sink_logit_ = r.sm_scale * (alpha_sum / heads_) * norm2;
    for (int p : r.prefix) {
      int bits = 0;
      for (uint64_t v = static_cast<uint64_t>(p) + 1; v; v >>= 1) ++bits;
      sink_beta_.push_back((4.0 + 0.6 * bits) / unit_sink_logit_);
    }
  }

  void prefix_row(int b, int p, uint16_t* row) override {
    if (p == 0) {
      const double beta = sink_beta_[static_cast<size_t>(b)];
      for (int d = 0; d < kLatentDims; ++d) row[d] = double_to_bf16(beta * sink_dir_[d] + 0.05 * pool_.normalish());
    } else {
      latent_key(pool_, row);
    }
    rope_key(p, row);
  }
  void draft_row(int, int, int pos, uint16_t* row) override {
    latent_key(draft_, row);
    rope_key(pos, row);
  }
  void query_row(int, int, int pos, int h, uint16_t* row) override {
    const Head& hd = head_[static_cast<size_t>(h)];
    for (int d = 0; d < kLatentDims; ++d) {
      const double noise = (outlier_[d] ? 0.02 : 0.2) * query_.normalish();
      row[d] = double_to_bf16(hd.alpha * sink_dir_[d] + noise);
    }
    fill_rope(pos, theta_, hd.rope_amp, hd.phase, row + kLatentDims, kPairs);
  }
  void filler_row(uint16_t* row) override {
    latent_key(fill_, row);
    rope_key(static_cast<int>(fill_.below(1u << 20)), row);
  }

 private:
  struct Head {
    double alpha = 0;  // weight of the shared sink direction in this head's queries
    double rope_amp[kPairs] = {};
    double phase[kPairs] = {};
  };
  void latent_key(Rng& rng, uint16_t* row) const { fill_scaled_normalish(rng, chan_scale_, row, kLatentDims); }
  void rope_key(int pos, uint16_t* row) const { fill_rope(pos, theta_, rope_amp_, nullptr, row + kLatentDims, kPairs); }

  int heads_;
  double chan_scale_[kLatentDims];
  bool outlier_[kLatentDims] = {};
  double sink_dir_[kLatentDims];
  double theta_[kPairs];
  double rope_amp_[kPairs];
  std::vector<Head> head_;
  double unit_sink_logit_ = 1;
  std::vector<double> sink_beta_;
};

}  // namespace

std::unique_ptr<ValueProfile> make_k26_profile(const Recipe& r) { return std::make_unique<K26Profile>(r); }

}  // namespace vattn::gen
