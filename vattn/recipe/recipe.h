// SPDX-License-Identifier: Apache-2.0
// A Recipe is the whole description of a generated case: printed as one line, parsed back from
// that line (recipe_line.cpp), and the generators (gen/) make the tensors from it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vattn/case/case.h"

namespace vattn {

struct Recipe {
  int heads = 8;
  std::vector<int> prefix;           // P_b per request (B = size)
  std::vector<int> drafts;           // T_b per request
  std::string tree = "chain";        // chain | random | star | ddtree | deep | wide | padded
  std::string profile = "uniform";   // uniform | k26 | adversarial | huge | ties | tiny
  std::string layout = "scattered";  // contiguous | scattered | reversed | sparse
  bool poison = false;               // NaN/Inf in every pool row, padded draft and padded q outside K
  uint64_t seed = 1;
  double sm_scale = 0.1446796;  // K2.6 (yarn factor 64); always stored in the case
  int splits = 0;               // run parameter for kernels (0 = kernel chooses); not part of the tensors
  // Run parameters of the fuzzer's device-side variants (not part of the tensors; printed only
  // when set, so every other line stays as it was). slot_base: the pool is placed at this slot
  // offset inside a larger device pool of NaN rows (kv_indices shifted by it), so slot * d_qk
  // passes 2^32. fault: one input broken on the device after upload (vocab::kFaults), which the
  // kernel must report in its error word while NaN-ing the rows it affects.
  int64_t slot_base = 0;
  std::string fault = "none";
  // The plan a caller would make for this case (run parameters, printed only when set). limits:
  // the vattn_limits a serving engine passes when it sizes its workspace (heads are always H);
  // all zero = the worker's own limits (its stream's envelope). sms / sm_blocks: plan as a GPU with
  // that many SMs and resident partial blocks per SM would (0 = the GPU the case runs on), through
  // the in-tree revisions' test-only plan hook, so the test GPU runs the plans of the target GPU
  // (the RTX PRO 6000: sms=188 sm_blocks=1).
  struct PlanLimits {
    int max_requests = 0;
    int64_t max_total_drafts = 0;
    int max_drafts_per_request = 0;
    int max_splits = 0;
    bool set() const { return max_requests != 0; }
  };
  PlanLimits limits;
  int sms = 0;
  int sm_blocks = 0;

  std::string to_line()
      const;  // "B=2 H=8 P=[4099,0] T=[17,1] tree=random profile=k26 layout=scattered poison=0 seed=7 scale=0.1446796 splits=3"
              // (then " slot_base=N", " fault=KIND", " limits=R/Q/T/S", " sms=N" and " sm_blocks=K"
              // when they are set; limits = max_requests/max_total_drafts/max_drafts_per_request/max_splits)
  // Throws InputError(field = the key) on bad input, and when limits do not admit the case
  // (B <= R, sum T_b <= Q, every T_b <= T, 1 <= S, forced splits <= S) or sm_blocks comes without sms.
  static Recipe parse(const std::string& line);
};

// Why the recipe line a case carries (Case::recipe) cannot be the one that re-creates it, or ""
// ("" also when it has none): it does not parse, or it describes another shape (B, H, P_b, T_b,
// d_qk/d_v of the generators, sm_scale). The tensors are not regenerated. Replay prints the line
// as the way to re-create a failing case, so readers and writers of case files refuse a wrong one.
// Expects a case that validate()s.
std::string recipe_mismatch(const Case& c);

}  // namespace vattn
