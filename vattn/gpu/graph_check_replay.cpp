// SPDX-License-Identifier: Apache-2.0
// Checks "replay" and "two-graphs": one captured graph serves every batch within the limits.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include <cuda_runtime.h>

#include "vattn/case/bf16.h"
#include "vattn/gpu/graph_check_internal.h"
#include "vattn/gpu/graph_schedule.h"

namespace vattn::graph_check {

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

bool bf16_is_nan(uint16_t bits) { return (bits & 0x7f80u) == 0x7f80u && (bits & 0x7fu) != 0; }
bool f32_is_nan(uint32_t bits) { return (bits & 0x7f800000u) == 0x7f800000u && (bits & 0x7fffffu) != 0; }

Outcome collect(GraphSlot& slot) {
  VATTN_CUDA(cudaStreamSynchronize(slot.stream()));
  VATTN_CUDA(cudaGetLastError());
  Outcome o;
  o.error_word = slot.read_error_word();
  o.raw = slot.download();
  o.guards = slot.guard_violations();
  return o;
}

void launch_graph(GraphSlot& slot, const GraphExec& exec, cudaStream_t stream) {
  slot.poison_outputs_and_workspace();
  VATTN_CUDA(cudaGraphLaunch(exec.get(), stream));
}

Outcome run_eager(GraphSlot& slot) {
  slot.poison_outputs_and_workspace();
  const vattn_status st = slot.enqueue(slot.stream());
  Outcome o = collect(slot);
  o.status = st;
  return o;
}

namespace {

// "token 5 (request 1, draft 2) head 3", or a padding row past the loaded case.
std::string row_name(const GraphSlot& slot, int64_t row) {
  const int H = slot.shape().limits.num_heads;
  const int64_t token = row / H, head = row % H;
  const auto& qo = slot.loaded_qo_indptr();
  if (qo.empty() || token >= qo.back())
    return "padding row " + std::to_string(token) +
           " (past qo_indptr[B] = " + std::to_string(qo.empty() ? 0 : qo.back()) + ") head " + std::to_string(head);
  const int b = static_cast<int>(std::upper_bound(qo.begin(), qo.end(), static_cast<int32_t>(token)) - qo.begin()) - 1;
  return "token " + std::to_string(token) + " (request " + std::to_string(b) + ", draft " +
         std::to_string(token - qo[static_cast<size_t>(b)]) + ") head " + std::to_string(head);
}

template <class T>
std::string diff_text(const char* what, const std::vector<T>& g, const std::vector<T>& e, int64_t per_row,
                      const GraphSlot& slot) {
  size_t count = 0, first = 0;
  for (size_t i = 0; i < g.size(); ++i)
    if (g[i] != e[i] && count++ == 0) first = i;
  if (count == 0) return "";
  const int64_t row = static_cast<int64_t>(first) / per_row;
  char vals[128];
  if constexpr (sizeof(T) == 2) {
    std::snprintf(vals, sizeof vals, "replay 0x%04x (%g) vs eager 0x%04x (%g)", g[first], bf16_to_float(g[first]),
                  e[first], bf16_to_float(e[first]));
  } else {
    float fg, fe;
    std::memcpy(&fg, &g[first], 4);
    std::memcpy(&fe, &e[first], 4);
    std::snprintf(vals, sizeof vals, "replay 0x%08x (%g) vs eager 0x%08x (%g)", g[first], fg, e[first], fe);
  }
  std::string s = std::string(what) + " differs in " + std::to_string(count) + " of " + std::to_string(g.size()) +
                  " elements, first at " + row_name(slot, row);
  if (per_row > 1) s += " col " + std::to_string(static_cast<int64_t>(first) % per_row);
  return s + ": " + vals;
}

}  // namespace

std::string compare(const Outcome& replay, const Outcome& eager, const GraphSlot& slot, const vattn_revision* api) {
  std::string p;
  auto add = [&p](const std::string& s) {
    if (!s.empty()) p += (p.empty() ? "" : "; ") + s;
  };
  if (eager.status != VATTN_OK) add(std::string("eager run() returned '") + api->status_string(eager.status) + "'");
  if (replay.error_word) add("device error word " + hex(replay.error_word) + " after the replay");
  if (eager.error_word) add("device error word " + hex(eager.error_word) + " after the eager run");
  for (const auto& g : replay.guards) add("replay: " + g);
  for (const auto& g : eager.guards) add("eager: " + g);
  add(diff_text("out", replay.raw.out, eager.raw.out, 512, slot));
  add(diff_text("lse", replay.raw.lse, eager.raw.lse, 1, slot));
  return p;
}

std::string replay_and_compare(GraphSlot& slot, const GraphExec& exec, const Case& c, int splits) {
  slot.load(c);
  slot.set_forced_splits(splits);
  launch_graph(slot, exec, slot.stream());
  const Outcome replay = collect(slot);
  const Outcome eager = run_eager(slot);
  return compare(replay, eager, slot, slot.revision().api);
}

CheckResult check_replay(Env& env) {
  CheckResult r{"replay", false, ""};
  if (!env.has_graph()) {
    r.detail = env.no_graph();
    return r;
  }
  const int n = env.opt.replays;
  int auto_splits = 0, forced = 0, longest = 0;
  for (int i = 0; i < n; ++i) {
    const Recipe recipe = replay_recipe(env.shape, env.opt.seed, i);
    const Case c = generate_case(recipe, "replay-" + std::to_string(i));
    const std::string why = replay_and_compare(*env.slot, env.exec, c, recipe.splits);
    if (!why.empty()) {
      r.detail = "replay " + std::to_string(i) + " of " + std::to_string(n) + " differs from the eager run: " + why +
                 " [recipe: " + recipe.to_line() + "]";
      return r;
    }
    (recipe.splits == 0 ? auto_splits : forced)++;
    for (int p : recipe.prefix) longest = std::max(longest, p);
  }
  r.pass = true;
  r.detail = std::to_string(n) +
             " replays of one graph captured with P<=17, T<=3 bitwise equal eager runs (prefixes "
             "up to " +
             std::to_string(longest) + ", " + std::to_string(auto_splits) + " with the kernel's split count, " +
             std::to_string(forced) + " forced 1.." + std::to_string(env.shape.limits.max_splits) + ")";
  return r;
}

CheckResult check_two_graphs(Env& env) {
  CheckResult r{"two-graphs", false, ""};
  if (!env.has_graph()) {
    r.detail = env.no_graph();
    return r;
  }
  GraphSlot& a = *env.slot;
  GraphSlot b(env.rev, env.shape, "slot-b");
  b.load(generate_case(capture_recipe(env.shape, env.opt.seed + 1), "capture-b"));
  Capture cap_b = b.capture();
  if (!cap_b.ok) {
    r.detail = "second capture failed: " + cap_b.problem;
    return r;
  }
  GraphExec exec_b;
  exec_b.instantiate(cap_b.graph);
  const int rounds = env.opt.two_graph_rounds;
  for (int round = 0; round < rounds; ++round) {
    // Different data in each graph, and in each round; alternate which stream goes first.
    const Recipe ra = replay_recipe(env.shape, env.opt.seed + 101, round);
    const Recipe rb = replay_recipe(env.shape, env.opt.seed + 202, round + 3);
    const Case ca = generate_case(ra, "two-graphs-a"), cb = generate_case(rb, "two-graphs-b");
    a.load(ca);
    a.set_forced_splits(ra.splits);
    b.load(cb);
    b.set_forced_splits(rb.splits);
    a.poison_outputs_and_workspace();
    b.poison_outputs_and_workspace();
    if (round % 2 == 0) {
      VATTN_CUDA(cudaGraphLaunch(env.exec.get(), a.stream()));
      VATTN_CUDA(cudaGraphLaunch(exec_b.get(), b.stream()));
    } else {
      VATTN_CUDA(cudaGraphLaunch(exec_b.get(), b.stream()));
      VATTN_CUDA(cudaGraphLaunch(env.exec.get(), a.stream()));
    }
    const Outcome ga = collect(a), gb = collect(b);
    const Outcome ea = run_eager(a), eb = run_eager(b);
    const std::string wa = compare(ga, ea, a, env.rev.api), wb = compare(gb, eb, b, env.rev.api);
    if (!wa.empty() || !wb.empty()) {
      r.detail = "round " + std::to_string(round) + ": " +
                 (!wa.empty() ? "graph A: " + wa + " [recipe: " + ra.to_line() + "]"
                              : "graph B: " + wb + " [recipe: " + rb.to_line() + "]");
      return r;
    }
  }
  r.pass = true;
  r.detail = std::to_string(rounds) +
             " rounds of two graphs (own slots and workspaces) launched together on two "
             "streams, each bitwise equal to its eager run";
  return r;
}

}  // namespace vattn::graph_check
