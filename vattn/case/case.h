// SPDX-License-Identifier: Apache-2.0
// The case model: one verify-attention call (docs/verify-attention.md), host side.
// Everything in the suite (files, generators, oracles, kernels, fuzzers) meets here.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace vattn {

// A string from a file or another process, made safe to print: control bytes and broken UTF-8
// become \xNN (valid UTF-8 stays), so a name cannot move the cursor or erase a line.
// keep_newlines: a multi-line text keeps its line breaks (every other control byte is escaped).
std::string printable(const std::string& s, bool keep_newlines = false);
// A word quoted for a POSIX shell when it needs it (re-run lines people paste).
std::string shell_quote(const std::string& s);

// A problem with user-supplied input. Carries where it is, so every message can name
// the file, the case and the field. Tools map it to exit code 2.
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string case_name, std::string field, std::string reason);
  const std::string& file() const { return file_; }
  const std::string& case_name() const { return case_; }
  const std::string& field() const { return field_; }
  const std::string& reason() const { return reason_; }
  // The same error, now attributed to a file (readers add this once they know it).
  InputError in_file(const std::string& file) const;

 private:
  std::string file_, case_, field_, reason_;
};

// The producer whose out is stored as float32; every other producer's out is bf16 (case-format.md).
inline constexpr const char* kOracleProducer = "oracle_fp64";

// An expected output stored with a case: outputs/<producer>/{out,lse}.
struct StoredOutput {
  std::string producer;  // "serving", "oracle_fp64", "kernel:<rev>", ...
  std::string description;
  std::vector<float> out;   // [n_q, H, d_v]; widened from bf16 when stored as bf16
  bool out_is_bf16 = true;  // how it was (or will be) stored on disk: false for kOracleProducer only
  std::vector<float> lse;   // [n_q, H]; empty when the producer does not report it (lse_stored)
  bool lse_stored = true;   // false: no lse dataset (a serving kernel without one, e.g. SGLang's Triton
                            // extend kernel); oracle_fp64 always has it
};

struct Case {
  std::string name;    // group name under /cases/
  std::string recipe;  // one line that re-creates the case (generator spec), or "" for captures
  int num_heads = 0;
  int d_qk = 576;
  int d_v = 512;
  double sm_scale = 0.0;

  std::vector<uint16_t> q;                 // bf16 bits [n_q, H, d_qk]
  std::vector<uint16_t> kv_pool;           // bf16 bits [n_rows, d_qk]
  std::vector<int32_t> kv_indices;         // [kv_indptr[B]]
  std::vector<int32_t> kv_indptr;          // [B+1]
  std::vector<int64_t> kv_slot_ids;        // optional [n_rows]
  std::vector<uint16_t> kv_draft;          // bf16 bits [n_q, d_qk]
  std::vector<int32_t> qo_indptr;          // [B+1]
  std::vector<uint8_t> draft_mask;         // concatenated row-major T_b x T_b, 0/1
  std::vector<int64_t> draft_mask_indptr;  // [B+1]
  std::vector<int32_t> draft_parent;       // optional [n_q], -1 for a root

  std::map<std::string, int64_t> int_attrs;  // optional: layer, step, tp_rank
  std::vector<StoredOutput> outputs;

  int num_requests() const { return qo_indptr.empty() ? 0 : static_cast<int>(qo_indptr.size()) - 1; }
  int64_t n_q() const { return qo_indptr.empty() ? 0 : qo_indptr.back(); }
  int64_t n_rows() const { return d_qk > 0 ? static_cast<int64_t>(kv_pool.size()) / d_qk : 0; }
  int prefix_len(int b) const { return kv_indptr[b + 1] - kv_indptr[b]; }
  int drafts(int b) const { return qo_indptr[b + 1] - qo_indptr[b]; }
  // M_b[i][j] as stored (validated cases only).
  bool visible(int b, int i, int j) const {
    return draft_mask[static_cast<size_t>(draft_mask_indptr[b] + static_cast<int64_t>(i) * drafts(b) + j)] != 0;
  }
  // |K(b,i)|: the prefix plus the drafts row i of request b may see (validated cases only).
  int64_t visible_keys(int b, int i) const {
    int64_t k = prefix_len(b);
    for (int j = 0; j < drafts(b); ++j) k += visible(b, i, j) ? 1 : 0;
    return k;
  }
  // Whether any row has a key at all (if none, every output row is empty by definition).
  bool any_row_has_keys() const {
    for (int b = 0; b < num_requests(); ++b)
      for (int i = 0; i < drafts(b); ++i)
        if (visible_keys(b, i) > 0) return true;
    return false;
  }
  const StoredOutput* find_output(const std::string& producer) const;
  // The first NaN/Inf among the inputs the attention reads (q, referenced pool rows, draft
  // rows), described with its position; empty when there is none. Such inputs are legal (the
  // oracle's output is non-finite where they are read), but a reader of a FAIL should know.
  std::string first_nonfinite_input() const;

  // One line naming the case's shape, e.g. "B=2 H=8 P=[4099,0] T=[17,1] (recipe: ...)".
  std::string describe() const;
};

// Enforces every rule of docs/case-format.md; throws InputError naming case and field.
void validate(const Case& c);

// Parent value of a padded tree node (a graph-padding row with an all-zero mask row).
// Only generators use it; files store draft_parent only for trees without padding.
constexpr int32_t kPaddedNode = -2;

// Builds a dense mask from parent links (parents precede children; -1 = root; kPaddedNode).
std::vector<uint8_t> mask_from_parents(const std::vector<int32_t>& parent_of_request);

}  // namespace vattn
