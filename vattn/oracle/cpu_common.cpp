// SPDX-License-Identifier: Apache-2.0
#include "vattn/oracle/cpu_common.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "vattn/case/bf16.h"

namespace vattn {

namespace {
thread_local OracleProgressFn t_progress = nullptr;
thread_local void* t_progress_ctx = nullptr;
}  // namespace

void set_oracle_progress(OracleProgressFn fn, void* ctx) {
  t_progress = fn;
  t_progress_ctx = ctx;
}

namespace oracle_detail {
void report_oracle_progress(int64_t work) {
  if (t_progress != nullptr) t_progress(t_progress_ctx, work);
}
}  // namespace oracle_detail

}  // namespace vattn

namespace vattn::oracle_detail {
namespace {

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using Vec = Eigen::Matrix<T, Eigen::Dynamic, 1>;
template <class T>
using RowVec = Eigen::Matrix<T, 1, Eigen::Dynamic>;
using BoolMat = Eigen::Array<bool, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <class T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

template <class T>
void widen_rows(const uint16_t* src, int64_t rows, int cols, RowMat<T>& dst) {
  dst.resize(rows, cols);
  T* out = dst.data();
  const int64_t n = rows * cols;
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(bf16_to_float(src[i]));
}

// A draft row holding NaN/Inf. Its logits are recomputed outside the GEMM for the rows that
// see it, and its non-finite value entries are added back to those rows only.
template <class T>
struct BadDraft {
  int j = 0;
  bool bad_key = false;    // non-finite somewhere in [0, d_qk)
  bool bad_value = false;  // non-finite somewhere in [0, d_v)
  RowVec<T> value_part;    // the non-finite entries of [0, d_v), zeros elsewhere
};

// One sweep over a request's keys for a group of its T_b*H query rows (request row r is draft
// r/H, head r%H; the group holds rows [first, first + rows)). Local row r is request row first+r.
template <class T>
class RequestRun {
 public:
  RequestRun(const Case& c, const EngineConfig& cfg, int b, int64_t first, int64_t rows)
      : c_(c), cfg_(cfg), b_(b), H_(c.num_heads), dqk_(c.d_qk), dv_(c.d_v), T_(c.drafts(b)), P_(c.prefix_len(b)),
        rows_(rows), first_(first), q0_(c.qo_indptr[static_cast<size_t>(b)]), scale_(static_cast<T>(c.sm_scale)) {}

  void run(Reference& ref) {
    seen_.assign(static_cast<size_t>(T_), P_ > 0);
    for (int i = 0; i < T_; ++i)
      for (int j = 0; j < T_ && !seen_[static_cast<size_t>(i)]; ++j)
        seen_[static_cast<size_t>(i)] = c_.visible(b_, i, j);

    widen_rows(&c_.q[static_cast<size_t>((q0_ * H_ + first_) * dqk_)], rows_, dqk_, q_);
    // A row with an empty key set is never computed; zeroing its query (padded rows may hold
    // poison) keeps it out of every product.
    for (int64_t r = 0; r < rows_; ++r)
      if (!seen_[static_cast<size_t>(draft_of(r))]) q_.row(r).setZero();
    if (cfg_.scales) q_abs_ = q_.cwiseAbs().template cast<float>();

    m_.setConstant(rows_, kNegInf<T>);
    l_.setZero(rows_);
    acc_.setZero(rows_, dv_);
    if (cfg_.scales) {
      acc_abs_.setZero(rows_, dv_);
      s_abs_max_.setZero(rows_);
    }

    const int64_t base = c_.kv_indptr[static_cast<size_t>(b_)];
    for (int64_t k0 = 0; k0 < P_; k0 += cfg_.key_block) {
      const int64_t nk = std::min<int64_t>(cfg_.key_block, P_ - k0);
      keys_.resize(nk, dqk_);
      for (int64_t r = 0; r < nk; ++r) {
        const int64_t slot = c_.kv_indices[static_cast<size_t>(base + k0 + r)];
        const uint16_t* src = &c_.kv_pool[static_cast<size_t>(slot * dqk_)];
        T* dst = keys_.row(r).data();
        for (int d = 0; d < dqk_; ++d) dst[d] = static_cast<T>(bf16_to_float(src[d]));
      }
      if (cfg_.scales) keys_abs_ = keys_.cwiseAbs().template cast<float>();
      for (int64_t r0 = 0; r0 < rows_; r0 += cfg_.row_block)
        block(r0, std::min<int64_t>(cfg_.row_block, rows_ - r0), keys_, keys_, nullptr);
      report_oracle_progress(rows_ * nk);
    }

    draft_block();
    finish(ref);
  }

 private:
  void draft_block() {
    widen_rows(&c_.kv_draft[static_cast<size_t>(q0_ * dqk_)], T_, dqk_, keys_);
    clean_ = keys_;
    bad_.clear();
    for (int j = 0; j < T_; ++j) {
      BadDraft<T> bd;
      bd.j = j;
      for (int d = 0; d < dqk_; ++d) {
        const T x = keys_(j, d);
        if (std::isfinite(x)) continue;
        bd.bad_key = true;
        clean_(j, d) = 0;
        if (d < dv_) {
          if (!bd.bad_value) bd.value_part.setZero(dv_);
          bd.bad_value = true;
          bd.value_part(d) = x;
        }
      }
      if (bd.bad_key) bad_.push_back(std::move(bd));
    }
    if (cfg_.scales) keys_abs_ = clean_.cwiseAbs().template cast<float>();

    visible_.resize(rows_, T_);
    for (int64_t r = 0; r < rows_; ++r)
      for (int j = 0; j < T_; ++j) visible_(r, j) = c_.visible(b_, draft_of(r), j);

    for (int64_t r0 = 0; r0 < rows_; r0 += cfg_.row_block)
      block(r0, std::min<int64_t>(cfg_.row_block, rows_ - r0), clean_, keys_, &visible_);
  }

  // Rows [r0, r0+n) against one key block. `keys` feeds the logits GEMM and the values; for the
  // draft block it is the cleaned copy and `raw` the original rows (read only for bad drafts).
  void block(int64_t r0, int64_t n, const RowMat<T>& keys, const RowMat<T>& raw, const BoolMat* visible) {
    const int64_t nk = keys.rows();
    s_.resize(n, nk);
    s_.noalias() = (scale_ * q_.middleRows(r0, n)) * keys.transpose();
    if (visible) {
      for (const auto& bd : bad_) {
        for (int64_t r = 0; r < n; ++r)
          if ((*visible)(r0 + r, bd.j)) s_(r, bd.j) = scale_ * q_.row(r0 + r).dot(raw.row(bd.j));
      }
      s_.array() = visible->middleRows(r0, n).select(s_.array(), kNegInf<T>);
    }

    if (cfg_.scales) {
      s_abs_.resize(n, nk);
      s_abs_.noalias() = (static_cast<float>(scale_) * q_abs_.middleRows(r0, n)) * keys_abs_.transpose();
      if (visible) {
        for (const auto& bd : bad_) {
          for (int64_t r = 0; r < n; ++r) {
            if ((*visible)(r0 + r, bd.j)) {
              s_abs_(r, bd.j) = static_cast<float>(scale_ * q_.row(r0 + r).cwiseAbs().dot(raw.row(bd.j).cwiseAbs()));
            }
          }
        }
        s_abs_.array() = visible->middleRows(r0, n).select(s_abs_.array(), 0.0f);
      }
      auto smax = s_abs_max_.segment(r0, n);
      smax = smax.cwiseMax(s_abs_.rowwise().maxCoeff());
    }

    softmax_rows(r0, n);

    acc_.middleRows(r0, n).array().colwise() *= alpha_.array();
    acc_.middleRows(r0, n).noalias() += s_ * keys.leftCols(dv_);
    if (visible) {
      for (const auto& bd : bad_) {
        if (!bd.bad_value) continue;
        for (int64_t r = 0; r < n; ++r)
          if ((*visible)(r0 + r, bd.j)) acc_.row(r0 + r) += s_(r, bd.j) * bd.value_part;
      }
    }

    if (cfg_.scales) {
      const Vec<float> alpha_f = alpha_.template cast<float>();
      acc_abs_.middleRows(r0, n).array().colwise() *= alpha_f.array();
      if constexpr (std::is_same_v<T, float>) {
        acc_abs_.middleRows(r0, n).noalias() += s_ * keys_abs_.leftCols(dv_);
      } else {
        p_f_ = s_.template cast<float>();
        acc_abs_.middleRows(r0, n).noalias() += p_f_ * keys_abs_.leftCols(dv_);
      }
      if (visible) {
        for (const auto& bd : bad_) {
          if (!bd.bad_value) continue;
          for (int64_t r = 0; r < n; ++r) {
            if ((*visible)(r0 + r, bd.j))
              acc_abs_.row(r0 + r) += static_cast<float>(s_(r, bd.j)) * bd.value_part.cwiseAbs().template cast<float>();
          }
        }
      }
    }
  }

  // Turns the logits in s_ into (optionally bf16-rounded) probabilities relative to the block's
  // final running max, updating m, l and the factor alpha that rescales the accumulators.
  void softmax_rows(int64_t r0, int64_t n) {
    const int64_t nk = s_.cols();
    const int64_t tile = cfg_.tile > 0 ? cfg_.tile : std::max<int64_t>(nk, 1);
    const int64_t tiles = (nk + tile - 1) / tile;
    tile_max_.resize(tiles);
    alpha_.resize(n);
    for (int64_t r = 0; r < n; ++r) {
      auto row = s_.row(r);
      const T m_old = m_(r0 + r);
      T running = m_old;
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t t0 = t * tile, tw = std::min(tile, nk - t0);
        running = std::max(running, row.segment(t0, tw).maxCoeff());
        tile_max_(t) = running;
      }
      const T m_new = running;
      T added = 0;
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t t0 = t * tile, tw = std::min(tile, nk - t0);
        auto seg = row.segment(t0, tw).array();
        // A running max of -inf means nothing visible so far: shift by 0 so exp(-inf) = 0, not NaN.
        const T mt = tile_max_(t);
        const T shift = mt == kNegInf<T> ? T(0) : mt;
        seg = (seg - shift).exp();
        const T tile_sum = seg.sum();
        if (cfg_.round_p_bf16)
          seg = seg.unaryExpr([](T p) { return static_cast<T>(round_to_bf16(static_cast<float>(p))); });
        const T f = mt == kNegInf<T> ? T(0) : (mt == m_new ? T(1) : std::exp(mt - m_new));
        if (f != T(1)) seg *= f;
        added += tile_sum * f;
      }
      const T a = m_old == kNegInf<T> ? T(0) : (m_old == m_new ? T(1) : std::exp(m_old - m_new));
      alpha_(r) = a;
      l_(r0 + r) = l_(r0 + r) * a + added;
      m_(r0 + r) = m_new;
    }
  }

  int draft_of(int64_t local_row) const { return static_cast<int>((first_ + local_row) / H_); }

  void finish(Reference& ref) const {
    for (int64_t r = 0; r < rows_; ++r) {
      const size_t g = static_cast<size_t>(q0_ * H_ + first_ + r);
      double* out = &ref.out[g * static_cast<size_t>(dv_)];
      if (!seen_[static_cast<size_t>(draft_of(r))]) {
        std::fill(out, out + dv_, 0.0);
        ref.lse[g] = -std::numeric_limits<double>::infinity();
        if (cfg_.scales) {
          std::fill(&ref.abs_pv[g * static_cast<size_t>(dv_)], &ref.abs_pv[g * static_cast<size_t>(dv_)] + dv_, 0.0);
          ref.lse_scale[g] = 0;
        }
        continue;
      }
      const T l = l_(r);
      for (int d = 0; d < dv_; ++d) {
        const T o = acc_(r, d) / l;
        out[d] =
            cfg_.round_out_bf16 ? static_cast<double>(round_to_bf16(static_cast<float>(o))) : static_cast<double>(o);
      }
      ref.lse[g] = static_cast<double>(m_(r) + std::log(l));
      if (cfg_.scales) {
        const float lf = static_cast<float>(l);
        for (int d = 0; d < dv_; ++d)
          ref.abs_pv[g * static_cast<size_t>(dv_) + static_cast<size_t>(d)] = acc_abs_(r, d) / lf;
        ref.lse_scale[g] = s_abs_max_(r);
      }
    }
  }

  const Case& c_;
  const EngineConfig& cfg_;
  const int b_, H_, dqk_, dv_, T_, P_;
  const int64_t rows_, first_, q0_;
  const T scale_;
  std::vector<bool> seen_;  // per draft: K(b,i) non-empty

  RowMat<T> q_, keys_, clean_, acc_, s_;
  RowMat<float> q_abs_, keys_abs_, acc_abs_, s_abs_, p_f_;
  Vec<T> m_, l_, alpha_, tile_max_;
  Vec<float> s_abs_max_;
  BoolMat visible_;
  std::vector<BadDraft<T>> bad_;
};

}  // namespace

template <class Scalar>
Reference attend(const Case& c, const EngineConfig& cfg) {
  validate(c);
  if (const std::string why = oracle_work_problem(oracle_work(c)); !why.empty()) throw InputError("", c.name, "", why);
  if (cfg.key_block < 1 || cfg.row_block < 1 || cfg.row_group < 1 || cfg.tile < 0)
    throw std::invalid_argument("oracle engine: key_block, row_block and row_group must be >= 1, tile >= 0");
  const size_t rows = static_cast<size_t>(c.n_q()) * static_cast<size_t>(c.num_heads);
  Reference ref;
  ref.out.assign(rows * static_cast<size_t>(c.d_v), 0.0);
  ref.lse.assign(rows, 0.0);
  if (cfg.scales) {
    ref.abs_pv.assign(rows * static_cast<size_t>(c.d_v), 0.0);
    ref.lse_scale.assign(rows, 0.0);
  }
  for (int b = 0; b < c.num_requests(); ++b) {
    const int64_t rows_b = static_cast<int64_t>(c.drafts(b)) * c.num_heads;
    for (int64_t first = 0; first < rows_b; first += cfg.row_group)
      RequestRun<Scalar>(c, cfg, b, first, std::min<int64_t>(cfg.row_group, rows_b - first)).run(ref);
  }
  return ref;
}

template Reference attend<double>(const Case&, const EngineConfig&);
template Reference attend<float>(const Case&, const EngineConfig&);

}  // namespace vattn::oracle_detail
