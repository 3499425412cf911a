// SPDX-License-Identifier: Apache-2.0
// Checks "memory", "non-blocking", "limits-host" and "limits-device": run() neither allocates
// nor waits, and the plan limits hold whether the host or only the device can see a breach.
#include <chrono>
#include <cstdio>

#include <cuda_runtime.h>

#include "vattn/gpu/gate_kernel.h"
#include "vattn/gpu/graph_check_internal.h"
#include "vattn/gpu/graph_schedule.h"

namespace vattn::graph_check {

namespace {

size_t free_bytes() {
  VATTN_CUDA(cudaDeviceSynchronize());
  size_t free_b = 0, total_b = 0;
  VATTN_CUDA(cudaMemGetInfo(&free_b, &total_b));
  return free_b;
}

std::string ms_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f ms", ms);
  return buf;
}

// Rows [token0, token1) x all heads: every out and lse element NaN?
bool rows_all_nan(const RawOutputs& raw, int H, int64_t token0, int64_t token1) {
  const size_t r0 = static_cast<size_t>(token0 * H), r1 = static_cast<size_t>(token1 * H);
  for (size_t i = r0 * 512; i < r1 * 512; ++i)
    if (!bf16_is_nan(raw.out[i])) return false;
  for (size_t i = r0; i < r1; ++i)
    if (!f32_is_nan(raw.lse[i])) return false;
  return r1 > r0;
}

bool rows_any_nan(const RawOutputs& raw, int H, int64_t token0, int64_t token1) {
  const size_t r0 = static_cast<size_t>(token0 * H), r1 = static_cast<size_t>(token1 * H);
  for (size_t i = r0 * 512; i < r1 * 512; ++i)
    if (bf16_is_nan(raw.out[i])) return true;
  for (size_t i = r0; i < r1; ++i)
    if (f32_is_nan(raw.lse[i])) return true;
  return false;
}

}  // namespace

CheckResult check_memory(Env& env) {
  CheckResult r{"memory", false, ""};
  GraphSlot& slot = *env.slot;
  const int n = env.opt.memory_iterations;
  // One of each first: lazy module loading and graph upload may allocate once, legitimately.
  if (slot.enqueue(slot.stream()) != VATTN_OK) {
    r.detail = "eager run() failed before the measurement";
    return r;
  }
  if (env.has_graph()) VATTN_CUDA(cudaGraphLaunch(env.exec.get(), slot.stream()));
  VATTN_CUDA(cudaStreamSynchronize(slot.stream()));
  const size_t before = free_bytes();
  for (int i = 0; i < n; ++i) {
    const vattn_status st = slot.enqueue(slot.stream());
    if (st != VATTN_OK) {
      r.detail = std::string("eager run() returned '") + env.rev.api->status_string(st) + "' at iteration " +
                 std::to_string(i);
      return r;
    }
    if (env.has_graph()) VATTN_CUDA(cudaGraphLaunch(env.exec.get(), slot.stream()));
  }
  VATTN_CUDA(cudaStreamSynchronize(slot.stream()));
  const size_t after = free_bytes();
  const std::string what = std::to_string(n) + " eager runs" +
                           (env.has_graph() ? " and " + std::to_string(n) + " replays" : "") + ": free device memory " +
                           std::to_string(before) + " B before, " + std::to_string(after) + " B after";
  if (before != after) {
    const long long diff = static_cast<long long>(before) - static_cast<long long>(after);
    r.detail = what + " (" + std::to_string(diff) + " B " + (diff > 0 ? "taken" : "given back") +
               "): run() allocates device memory";
  } else {
    r.pass = true;
    r.detail = what + " (identical)";
    if (!env.has_graph()) r.detail += "; no graph, replays not measured";
  }
  return r;
}

CheckResult check_non_blocking(Env& env) {
  CheckResult r{"non-blocking", false, ""};
  GraphSlot& slot = *env.slot;
  // A blocking stream: the legacy default stream (plain cudaMemcpy) waits for it.
  Stream gate(cudaStreamDefault);
  VATTN_CUDA(launch_gate(gate.get(), 1));
  if (slot.enqueue(gate.get()) != VATTN_OK) {
    VATTN_CUDA(cudaStreamSynchronize(gate.get()));
    r.detail = "run() failed on the gate stream before the measurement";
    return r;
  }
  VATTN_CUDA(cudaStreamSynchronize(gate.get()));

  using clock = std::chrono::steady_clock;
  const double gate_ms = env.opt.gate_us / 1000.0;
  const auto t_gate = clock::now();
  VATTN_CUDA(launch_gate(gate.get(), env.opt.gate_us));
  const auto t0 = clock::now();
  const vattn_status st = slot.enqueue(gate.get());
  const auto t1 = clock::now();
  const cudaError_t busy = cudaStreamQuery(gate.get());
  const cudaError_t sync = cudaStreamSynchronize(gate.get());
  const auto t2 = clock::now();
  (void)cudaGetLastError();
  VATTN_CUDA(sync);
  const double run_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  const double total_ms = std::chrono::duration<double, std::milli>(t2 - t_gate).count();
  const std::string gate_text = "a " + ms_text(gate_ms) + " gate kernel ahead of it on the stream";
  if (st != VATTN_OK) {
    r.detail = std::string("run() returned '") + env.rev.api->status_string(st) + "' after " + ms_text(run_ms) +
               " with " + gate_text;
  } else if (run_ms >= env.opt.max_run_ms) {
    r.detail = "run() blocked the host for " + ms_text(run_ms) + " with " + gate_text + " (limit " +
               ms_text(env.opt.max_run_ms) + "): it synchronises, or copies to the host, inside run()";
  } else if (total_ms < 0.5 * gate_ms) {
    r.detail = "inconclusive: the gate kernel finished after " + ms_text(total_ms) + ", expected " + ms_text(gate_ms);
  } else {
    r.pass = true;
    r.detail = "run() returned after " + ms_text(run_ms) + " with " + gate_text + " (stream " +
               (busy == cudaErrorNotReady ? "still busy" : "already idle") + " on return; all done after " +
               ms_text(total_ms) + ")";
  }
  return r;
}

CheckResult check_limits_host(Env& env) {
  CheckResult r{"limits-host", false, ""};
  GraphSlot& slot = *env.slot;
  const vattn_limits& L = env.shape.limits;
  struct Breach {
    const char* what;
    vattn_args args;
  };
  std::vector<Breach> breaches;
  vattn_args a = slot.args();
  a.n_q = L.max_total_drafts + 1;
  breaches.push_back({"n_q over max_total_drafts", a});
  a = slot.args();
  a.num_requests = L.max_requests + 1;
  breaches.push_back({"B over max_requests", a});
  a = slot.args();
  a.num_heads = L.num_heads + 1;
  breaches.push_back({"heads other than the plan's", a});

  std::string ok_list, problems;
  for (const Breach& b : breaches) {
    slot.poison_outputs_and_workspace();
    const vattn_status st = slot.enqueue(b.args, slot.stream());
    const cudaError_t sync = cudaStreamSynchronize(slot.stream());
    const cudaError_t last = cudaGetLastError();
    std::string p;
    if (st == VATTN_OK) p = "run() accepted it";
    if (sync != cudaSuccess) p += std::string(p.empty() ? "" : ", ") + "stream error " + cudaGetErrorName(sync);
    if (sync == cudaSuccess && last != cudaSuccess)
      p += std::string(p.empty() ? "" : ", ") + "CUDA error " + cudaGetErrorName(last);
    if (sync == cudaSuccess) {
      const RawOutputs raw = slot.download();
      bool untouched = true;
      for (uint16_t v : raw.out) untouched = untouched && v == 0xffff;
      for (uint32_t v : raw.lse) untouched = untouched && v == 0xffffffffu;
      if (!untouched) p += std::string(p.empty() ? "" : ", ") + "outputs were written";
      for (const auto& g : slot.guard_violations()) p += (p.empty() ? "" : ", ") + g;
    }
    if (p.empty()) {
      ok_list += (ok_list.empty() ? "" : "; ") + std::string(b.what) + " -> '" + env.rev.api->status_string(st) + "'";
    } else {
      problems += (problems.empty() ? "" : "; ") + std::string(b.what) + ": " + p;
    }
  }
  r.pass = problems.empty();
  r.detail = r.pass ? "refused on the host, nothing written: " + ok_list : problems;
  return r;
}

namespace {

// One replay of the captured graph on a case the device must refuse; "" when the refusal
// looks right (error bit set, the named rows NaN, the rest clean, guards intact).
struct DeviceBreach {
  std::string what;
  Case c;
  int splits;
  uint32_t bit;
  int nan_request;  // -1: every row NaN; else only this request's rows, the others clean
};

std::string replay_breach(Env& env, const DeviceBreach& b) {
  GraphSlot& slot = *env.slot;
  slot.load(b.c);
  slot.set_forced_splits(b.splits);
  launch_graph(slot, env.exec, slot.stream());
  const cudaError_t sync = cudaStreamSynchronize(slot.stream());
  if (sync != cudaSuccess) return std::string("the replay faulted: ") + cudaGetErrorName(sync);
  const Outcome o = collect(slot);
  std::string p;
  auto add = [&p](const std::string& s) { p += (p.empty() ? "" : ", ") + s; };
  if (!(o.error_word & b.bit)) add("error word " + hex(o.error_word) + " lacks bit " + hex(b.bit));
  const int H = env.shape.limits.num_heads;
  const auto& qo = b.c.qo_indptr;
  if (b.nan_request < 0) {
    if (!rows_all_nan(o.raw, H, 0, qo.back())) add("not every output row is NaN");
  } else {
    const size_t k = static_cast<size_t>(b.nan_request);
    if (!rows_all_nan(o.raw, H, qo[k], qo[k + 1]))
      add("request " + std::to_string(b.nan_request) + "'s rows are not all NaN");
    for (size_t j = 0; j + 1 < qo.size(); ++j)
      if (j != k && rows_any_nan(o.raw, H, qo[j], qo[j + 1])) add("request " + std::to_string(j) + " has NaN rows too");
  }
  for (const auto& g : o.guards) add(g);
  return p;
}

}  // namespace

CheckResult check_limits_device(Env& env) {
  CheckResult r{"limits-device", false, ""};
  if (!env.has_graph()) {
    r.detail = env.no_graph();
    return r;
  }
  const SlotShape& s = env.shape;
  const Recipe base_recipe = limits_base_recipe(s, env.opt.seed + 7);
  const Case base = generate_case(base_recipe, "limits-base");
  std::vector<DeviceBreach> breaches;

  // T_b one over max_drafts_per_request, the total still within n_q.
  Recipe over = base_recipe;
  over.drafts.assign(over.drafts.size(), 1);
  over.drafts[0] = s.limits.max_drafts_per_request + 1;
  int64_t total = 0;
  for (int t : over.drafts) total += t;
  std::string skipped;
  if (total <= s.limits.max_total_drafts) {
    breaches.push_back({"T_0 = " + std::to_string(over.drafts[0]) + " > max_drafts_per_request",
                        generate_case(over, "limits-drafts"), 0, VATTN_DEVERR_LIMITS, -1});
  } else {
    skipped = " (T_b over the limit not tried: n_q too small to hold it)";
  }
  // A kv index past the pool the graph was captured with, in the last request.
  const int victim = s.limits.max_requests - 1;
  if (base.prefix_len(victim) >= 3) {
    Case bad = base;
    bad.kv_indices[static_cast<size_t>(bad.kv_indptr[static_cast<size_t>(victim)] + 2)] =
        static_cast<int32_t>(s.pool_rows() + 5);
    for (int splits : {1, std::min(3, s.limits.max_splits)})
      breaches.push_back(
          {"kv index past the pool, splits " + std::to_string(splits), bad, splits, VATTN_DEVERR_KV_INDEX, victim});
  }
  breaches.push_back({"forced splits " + std::to_string(s.limits.max_splits + 1) + " > max_splits", base,
                      s.limits.max_splits + 1, VATTN_DEVERR_SPLITS, -1});
  breaches.push_back({"forced splits -1", base, -1, VATTN_DEVERR_SPLITS, -1});

  std::string ok_list;
  for (const DeviceBreach& b : breaches) {
    const std::string p = replay_breach(env, b);
    if (!p.empty()) {
      r.detail = b.what + ": " + p + " [recipe: " + base_recipe.to_line() + "]";
      return r;
    }
    ok_list += (ok_list.empty() ? "" : "; ") + b.what + " -> " + hex(b.bit);
  }
  // The next clean replay must clear the word and match eager again.
  const std::string after = replay_and_compare(*env.slot, env.exec, base, 0);
  if (!after.empty()) {
    r.detail = "the clean replay after the refusals: " + after;
    return r;
  }
  r.pass = true;
  r.detail = "graph replays set the error bit and NaN the rows, no fault: " + ok_list +
             "; the next clean replay matches eager" + skipped;
  return r;
}

}  // namespace vattn::graph_check
