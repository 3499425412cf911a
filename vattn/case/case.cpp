// SPDX-License-Identifier: Apache-2.0
#include "vattn/case/case.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace vattn {

namespace {
// Length of the valid UTF-8 sequence starting at s[i], or 0.
size_t utf8_length(const std::string& s, size_t i) {
  const auto byte = [&s](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  const size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  return n;
}

std::string compose(const std::string& file, const std::string& case_name, const std::string& field,
                    const std::string& reason) {
  std::ostringstream os;
  if (!file.empty()) os << printable(file) << ": ";
  if (!case_name.empty()) os << "case '" << printable(case_name) << "': ";
  if (!field.empty()) os << "field '" << printable(field) << "': ";
  os << printable(reason);
  return os.str();
}

std::string list_summary(const std::vector<int>& v) {
  std::ostringstream os;
  os << '[';
  const size_t shown = v.size() <= 8 ? v.size() : 6;
  for (size_t i = 0; i < shown; ++i) os << (i ? "," : "") << v[i];
  if (shown < v.size()) os << ",...," << v.back() << " (" << v.size() << " requests)";
  os << ']';
  return os.str();
}
}  // namespace

// Names and values read from a damaged file may hold any bytes: control bytes and broken UTF-8
// are shown as \xNN, so the message stays one readable line.
std::string printable(const std::string& s, bool keep_newlines) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c >= 0x20 && c < 0x7f) || (keep_newlines && c == '\n')) {
      out += s[i++];
    } else if (const size_t n = c >= 0x80 ? utf8_length(s, i) : 0; n > 0) {
      out.append(s, i, n);
      i += n;
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
    }
  }
  return out;
}

std::string shell_quote(const std::string& s) {
  bool plain = !s.empty();
  for (char c : s)
    plain = plain && (isalnum(static_cast<unsigned char>(c)) || std::string("-_./:=@,+").find(c) != std::string::npos);
  if (plain) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

InputError::InputError(std::string file, std::string case_name, std::string field, std::string reason)
    : std::runtime_error(compose(file, case_name, field, reason)), file_(std::move(file)), case_(std::move(case_name)),
      field_(std::move(field)), reason_(std::move(reason)) {}

InputError InputError::in_file(const std::string& file) const { return InputError(file, case_, field_, reason_); }

std::string Case::first_nonfinite_input() const {
  const auto nonfinite = [](uint16_t bits) { return (bits & 0x7f80u) == 0x7f80u; };
  const size_t per_token = static_cast<size_t>(num_heads) * static_cast<size_t>(d_qk);
  for (int b = 0; b < num_requests(); ++b) {
    for (int i = 0; i < drafts(b); ++i) {
      if (visible_keys(b, i) == 0) continue;  // an empty row reads nothing, not even its q
      const size_t token = static_cast<size_t>(qo_indptr[b]) + static_cast<size_t>(i);
      for (size_t e = token * per_token; e < (token + 1) * per_token; ++e) {
        if (nonfinite(q[e]))
          return "q[token " + std::to_string(token) + ", head " + std::to_string(e % per_token / d_qk) + ", col " +
                 std::to_string(e % d_qk) + "]";
      }
    }
  }
  for (int b = 0; b < num_requests(); ++b) {
    for (int k = 0; k < prefix_len(b); ++k) {
      const int64_t row = kv_indices[static_cast<size_t>(kv_indptr[b]) + static_cast<size_t>(k)];
      for (int d = 0; d < d_qk; ++d) {
        if (nonfinite(kv_pool[static_cast<size_t>(row * d_qk + d)]))
          return "kv_pool[row " + std::to_string(row) + ", col " + std::to_string(d) + "] (request " +
                 std::to_string(b) + ", prefix key " + std::to_string(k) + ")";
      }
    }
  }
  for (int b = 0; b < num_requests(); ++b) {
    for (int j = 0; j < drafts(b); ++j) {
      bool seen = false;  // a draft no row sees (a padded node) is never read
      for (int i = 0; i < drafts(b) && !seen; ++i) seen = visible(b, i, j);
      const int64_t token = qo_indptr[b] + j;
      for (int d = 0; seen && d < d_qk; ++d) {
        if (nonfinite(kv_draft[static_cast<size_t>(token * d_qk + d)]))
          return "kv_draft[token " + std::to_string(token) + ", col " + std::to_string(d) + "] (request " +
                 std::to_string(b) + ", draft " + std::to_string(j) + ")";
      }
    }
  }
  return "";
}

const StoredOutput* Case::find_output(const std::string& producer) const {
  for (const auto& o : outputs)
    if (o.producer == producer) return &o;
  return nullptr;
}

std::string Case::describe() const {
  std::vector<int> p, t;
  for (int b = 0; b < num_requests(); ++b) {
    p.push_back(prefix_len(b));
    t.push_back(drafts(b));
  }
  std::ostringstream os;
  os << "B=" << num_requests() << " H=" << num_heads << " P=" << list_summary(p) << " T=" << list_summary(t);
  if (!recipe.empty()) os << "  [" << recipe << "]";
  return os.str();
}

std::vector<uint8_t> mask_from_parents(const std::vector<int32_t>& parent) {
  const size_t t = parent.size();
  std::vector<uint8_t> m(t * t, 0);
  for (size_t i = 0; i < t; ++i) {
    if (parent[i] == kPaddedNode) continue;  // padded node: sees nothing, not even itself
    // Walk up the ancestors; parents precede children, so each walk is bounded by i.
    for (int64_t j = static_cast<int64_t>(i); j >= 0; j = parent[static_cast<size_t>(j)]) {
      m[i * t + static_cast<size_t>(j)] = 1;
      if (parent[static_cast<size_t>(j)] >= j) break;  // malformed link; validate() reports it
    }
  }
  return m;
}

namespace {

struct Checker {
  const Case& c;
  [[noreturn]] void fail(const std::string& field, const std::string& reason) const {
    throw InputError("", c.name, field, reason);
  }
  template <class T>
  void indptr(const std::vector<T>& v, const char* field, size_t want_size) const {
    if (v.size() != want_size) {
      fail(field,
           "has " + std::to_string(v.size()) + " entries, expected num_requests+1 = " + std::to_string(want_size));
    }
    if (v[0] != 0) fail(field, "must start at 0, starts at " + std::to_string(v[0]));
    for (size_t i = 1; i < v.size(); ++i) {
      if (v[i] < v[i - 1]) {
        fail(field, "decreases at position " + std::to_string(i) + " (" + std::to_string(v[i - 1]) + " -> " +
                        std::to_string(v[i]) + ")");
      }
    }
  }
  void size_is(size_t have, size_t want, const char* field, const std::string& shape) const {
    if (have != want) {
      fail(field, "has " + std::to_string(have) + " elements, expected " + std::to_string(want) + " (" + shape + ")");
    }
  }
};

}  // namespace

void validate(const Case& c) {
  Checker k{c};
  if (c.num_heads < 1) k.fail("num_heads", "must be >= 1, got " + std::to_string(c.num_heads));
  if (c.d_qk < 1) k.fail("d_qk", "must be >= 1, got " + std::to_string(c.d_qk));
  if (c.d_v < 1 || c.d_v > c.d_qk) {
    k.fail("d_v", "must be in [1, d_qk=" + std::to_string(c.d_qk) + "], got " + std::to_string(c.d_v));
  }
  if (!std::isfinite(c.sm_scale) || c.sm_scale <= 0) {
    std::ostringstream os;
    os << "must be finite and > 0, got " << c.sm_scale;
    k.fail("sm_scale", os.str());
  }
  if (c.qo_indptr.size() < 2) k.fail("qo_indptr", "needs at least 2 entries (num_requests >= 1)");
  const size_t nb = c.qo_indptr.size();
  const int B = c.num_requests();
  k.indptr(c.qo_indptr, "qo_indptr", nb);
  k.indptr(c.kv_indptr, "kv_indptr", nb);
  k.indptr(c.draft_mask_indptr, "draft_mask_indptr", nb);
  for (int b = 0; b < B; ++b) {
    if (c.drafts(b) < 1) k.fail("qo_indptr", "request " + std::to_string(b) + " has T_b = 0 draft tokens (needs >= 1)");
  }

  const int64_t nq = c.n_q();
  const size_t H = static_cast<size_t>(c.num_heads), dqk = static_cast<size_t>(c.d_qk);
  k.size_is(c.q.size(), static_cast<size_t>(nq) * H * dqk, "q", "n_q x num_heads x d_qk");
  k.size_is(c.kv_draft.size(), static_cast<size_t>(nq) * dqk, "kv_draft", "n_q x d_qk");
  if (c.kv_pool.size() % dqk != 0) {
    k.fail("kv_pool",
           std::to_string(c.kv_pool.size()) + " elements is not a whole number of rows of d_qk=" + std::to_string(dqk));
  }
  k.size_is(c.kv_indices.size(), static_cast<size_t>(c.kv_indptr.back()), "kv_indices", "kv_indptr[B]");
  const int64_t rows = c.n_rows();
  for (size_t i = 0; i < c.kv_indices.size(); ++i) {
    if (c.kv_indices[i] < 0 || c.kv_indices[i] >= rows) {
      k.fail("kv_indices", "entry " + std::to_string(i) + " = " + std::to_string(c.kv_indices[i]) +
                               " is outside kv_pool (" + std::to_string(rows) + " rows)");
    }
  }
  if (!c.kv_slot_ids.empty()) k.size_is(c.kv_slot_ids.size(), static_cast<size_t>(rows), "kv_slot_ids", "n_rows");
  for (size_t i = 0; i < c.kv_slot_ids.size(); ++i) {
    if (c.kv_slot_ids[i] < 0) k.fail("kv_slot_ids", "entry " + std::to_string(i) + " is negative");
  }
  {  // each stored row came from its own pool slot
    std::vector<std::pair<int64_t, size_t>> by_slot;
    by_slot.reserve(c.kv_slot_ids.size());
    for (size_t i = 0; i < c.kv_slot_ids.size(); ++i) by_slot.emplace_back(c.kv_slot_ids[i], i);
    std::sort(by_slot.begin(), by_slot.end());
    for (size_t i = 1; i < by_slot.size(); ++i) {
      if (by_slot[i].first == by_slot[i - 1].first) {
        k.fail("kv_slot_ids", "entries " + std::to_string(by_slot[i - 1].second) + " and " +
                                  std::to_string(by_slot[i].second) + " both name slot " +
                                  std::to_string(by_slot[i].first) + " (each stored row comes from its own slot)");
      }
    }
  }

  int64_t mask_total = 0;
  for (int b = 0; b < B; ++b) {
    const int64_t t = c.drafts(b);
    const int64_t have = c.draft_mask_indptr[static_cast<size_t>(b) + 1] - c.draft_mask_indptr[static_cast<size_t>(b)];
    if (have != t * t) {
      k.fail("draft_mask_indptr", "request " + std::to_string(b) + " spans " + std::to_string(have) +
                                      " mask entries, expected T_b^2 = " + std::to_string(t * t));
    }
    mask_total += t * t;
  }
  k.size_is(c.draft_mask.size(), static_cast<size_t>(mask_total), "draft_mask", "sum of T_b^2");
  for (size_t i = 0; i < c.draft_mask.size(); ++i) {
    if (c.draft_mask[i] > 1) {
      k.fail("draft_mask", "entry " + std::to_string(i) + " = " + std::to_string(c.draft_mask[i]) + " (only 0 or 1)");
    }
  }
  for (int b = 0; b < B; ++b) {
    const int t = c.drafts(b);
    for (int i = 0; i < t; ++i) {
      if (c.visible(b, i, i)) continue;
      for (int j = 0; j < t; ++j) {
        if (c.visible(b, i, j)) {
          k.fail("draft_mask", "request " + std::to_string(b) + " row " + std::to_string(i) +
                                   " has 0 on its diagonal but is not a padded (all-zero) row");
        }
      }
    }
  }

  if (!c.draft_parent.empty()) {
    k.size_is(c.draft_parent.size(), static_cast<size_t>(nq), "draft_parent", "n_q");
    for (int b = 0; b < B; ++b) {
      const int t = c.drafts(b);
      std::vector<int32_t> par(c.draft_parent.begin() + c.qo_indptr[b], c.draft_parent.begin() + c.qo_indptr[b + 1]);
      for (int i = 0; i < t; ++i) {
        if (par[i] < -1 || par[i] >= i) {
          k.fail("draft_parent", "request " + std::to_string(b) + " node " + std::to_string(i) + " has parent " +
                                     std::to_string(par[i]) + " (must be -1 or a smaller index)");
        }
      }
      const auto m = mask_from_parents(par);
      for (int i = 0; i < t; ++i) {
        for (int j = 0; j < t; ++j) {
          if ((m[static_cast<size_t>(i) * t + j] != 0) != c.visible(b, i, j)) {
            k.fail("draft_parent", "request " + std::to_string(b) + ": parents give M[" + std::to_string(i) + "][" +
                                       std::to_string(j) + "] = " + std::to_string(m[static_cast<size_t>(i) * t + j]) +
                                       " but draft_mask has " + std::to_string(c.visible(b, i, j) ? 1 : 0));
          }
        }
      }
    }
  }

  for (const auto& o : c.outputs) {
    const std::string base = "outputs/" + o.producer + "/";
    k.size_is(o.out.size(), static_cast<size_t>(nq) * H * static_cast<size_t>(c.d_v), (base + "out").c_str(),
              "n_q x num_heads x d_v");
    if (o.lse_stored || o.producer == kOracleProducer)
      k.size_is(o.lse.size(), static_cast<size_t>(nq) * H, (base + "lse").c_str(), "n_q x num_heads");
    else
      k.size_is(o.lse.size(), 0, (base + "lse").c_str(), "empty when it is not stored");
  }
}

}  // namespace vattn
