// SPDX-License-Identifier: Apache-2.0
#include "vattn/testbed/testbed.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <cuda_runtime.h>

#include "vattn/gpu/cuda_check.h"
#include "vattn/gpu/naive_runner.h"
#include "vattn/testbed/contract.h"
#include "vattn/testbed/partials.h"
#include "vattn/testbed/repro.h"

namespace vattn::testbed {

namespace {

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

// Adds the seconds from its construction to its end to `total`.
class Timed {
 public:
  explicit Timed(double& total) : total_(total), t0_(std::chrono::steady_clock::now()) {}
  ~Timed() { total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  double& total_;
  std::chrono::steady_clock::time_point t0_;
};

bool gpu_oracle_chosen(const Case& c, OracleChoice o) {
  return o == OracleChoice::kNaiveGpu || (o == OracleChoice::kBySize && case_work(c) > kCpuOracleMaxWork);
}

// The rows-NaN part of an injected fault: the broken request's rows must be NaN. Returns the
// first row that is not ("" when all are), and copies the reference into those rows of out/lse
// so a comparison judges the other rows only.
std::string fault_rows_problem(const Case& c, const FaultPlan& fault, const Reference& ref, std::vector<float>& out,
                               std::vector<float>& lse) {
  std::string bad;
  const int64_t H = c.num_heads, dv = c.d_v;
  const int64_t q0 = c.qo_indptr[static_cast<size_t>(fault.request)],
                q1 = c.qo_indptr[static_cast<size_t>(fault.request) + 1];
  for (int64_t row = q0 * H; row < q1 * H && bad.empty(); ++row) {
    if (!std::isnan(lse[static_cast<size_t>(row)])) {
      bad = "request " + std::to_string(fault.request) + " row " + std::to_string(row / H - q0) + " head " +
            std::to_string(row % H) + ": lse " + std::to_string(lse[static_cast<size_t>(row)]) +
            " after a broken kv index (expected NaN)";
    }
    for (int64_t d = 0; d < dv && bad.empty(); ++d) {
      if (!std::isnan(out[static_cast<size_t>(row * dv + d)])) {
        bad = "request " + std::to_string(fault.request) + " row " + std::to_string(row / H - q0) + " column " +
              std::to_string(d) + " is finite after a broken kv index (expected NaN)";
      }
    }
    lse[static_cast<size_t>(row)] = static_cast<float>(ref.lse[static_cast<size_t>(row)]);
    for (int64_t d = 0; d < dv; ++d)
      out[static_cast<size_t>(row * dv + d)] = static_cast<float>(ref.out[static_cast<size_t>(row * dv + d)]);
  }
  return bad;
}

// The references of an observation: given, the naive GPU oracle run() computed, or the CPU
// oracles (computed here once, kept in the outcome).
References references_for(const Case& c, const Observation& obs, const References* given, Outcome& outcome) {
  if (obs.options.oracle == OracleChoice::kGiven) return given ? *given : References{};
  if (obs.naive) return {obs.naive.get(), nullptr, kNaiveGpuOracle};
  if (!outcome.ref64) {
    outcome.ref64 = std::make_shared<Reference>(oracle_fp64(c));
    outcome.bf16 = std::make_shared<Reference>(reference_bf16_emulated(c));
  }
  return {outcome.ref64.get(), outcome.bf16.get(), kOracleFp64};
}

}  // namespace

int64_t case_work(const Case& c) {
  int64_t w = 0;
  for (int b = 0; b < c.num_requests(); ++b) w += int64_t{c.drafts(b)} * c.num_heads * (c.prefix_len(b) + c.drafts(b));
  return w;
}

std::string beyond_capabilities(const Revision& rev, const Case& c) {
  vattn_caps caps{};
  if (rev.api->capabilities(&caps) != VATTN_OK) return "the revision reports no capabilities";
  auto over = [](const std::string& what, int64_t have, int64_t most) {
    return what + " = " + std::to_string(have) + " > " + std::to_string(most);
  };
  if (c.d_qk != caps.d_qk || c.d_v != caps.d_v)
    return "d_qk/d_v = " + std::to_string(c.d_qk) + "/" + std::to_string(c.d_v) + ", the revision implements " +
           std::to_string(caps.d_qk) + "/" + std::to_string(caps.d_v);
  if (c.num_heads > caps.max_heads) return over("H", c.num_heads, caps.max_heads);
  if (c.num_requests() > caps.max_requests) return over("B", c.num_requests(), caps.max_requests);
  for (int b = 0; b < c.num_requests(); ++b) {
    if (c.drafts(b) > caps.max_drafts_per_request)
      return over("T_" + std::to_string(b), c.drafts(b), caps.max_drafts_per_request);
    if (c.prefix_len(b) > caps.max_prefix) return over("P_" + std::to_string(b), c.prefix_len(b), caps.max_prefix);
  }
  return "";
}

Testbed::Testbed(Revision rev, const vattn_limits& limits)
    : own_(std::make_unique<KernelRunner>(std::move(rev), limits)), runner_(own_.get()) {}

Observation Testbed::run(DeviceCase& dc, const Case& c, const Options& options) {
  KernelRunner& runner = *runner_;
  // Before anything runs: a plan the revision cannot make refuses the case.
  const ScopedPlan plan(runner.revision().plan_for, options.plan, runner.revision().describe());
  Observation obs;
  obs.options = options;
  obs.options.inject = nullptr;
  obs.api = runner.revision().api;
  const bool faulted = options.properties.has(Property::kInjectedFault) && options.inject;
  if (options.oracle != OracleChoice::kGiven) {
    obs.oracle = gpu_oracle_chosen(c, options.oracle) ? kNaiveGpuOracle : kOracleFp64;
    // On the clean case, before a fault is planted.
    if (obs.oracle == kNaiveGpuOracle) {
      Timed t(obs.oracle_s);
      obs.naive = std::make_shared<const Reference>(naive_gpu_reference(dc));
    }
  }
  {
    Timed t(obs.kernel_s);
    // Host-side calls that return at once, and one small download; a faulted case has broken inputs.
    if (!faulted && options.properties.has(Property::kArgumentContract))
      obs.contract = argument_contract_problem(runner, dc);
    if (faulted) obs.fault = options.inject(dc, runner);
    obs.run = runner.run(dc, options.splits, nullptr, faulted ? kFaultedOutputFill : 0xFF);
  }
  if (faulted || !obs.run.ok()) return obs;
  // One KV row up and back, one more kernel run.
  if (options.properties.has(Property::kPartlyVisiblePoison)) {
    Timed t(obs.kernel_s);
    obs.poison = partly_visible_draft_poison(c, options.seed);
    if (obs.poison.applies()) {
      uint16_t* row = dc.kv_draft.as<uint16_t>() + obs.poison.kv_draft_row(c) * c.d_qk;
      const size_t bytes = obs.poison.row.size() * sizeof(uint16_t);
      VATTN_CUDA(cudaMemcpy(row, obs.poison.row.data(), bytes, cudaMemcpyHostToDevice));
      obs.poisoned = runner.run(dc, options.splits);
      VATTN_CUDA(cudaMemcpy(row, &c.kv_draft[static_cast<size_t>(obs.poison.kv_draft_row(c) * c.d_qk)], bytes,
                            cudaMemcpyHostToDevice));
    }
  }
  // Last: it zeroes the queries on the device. The same case with every query zero, at the split
  // count the run used and at one split (partials.h).
  if (options.properties.has(Property::kFp32Partials) && obs.run.splits_used >= 2) {
    Timed t(obs.partials_s);
    VATTN_CUDA(cudaMemset(dc.q.data(), 0, dc.q.bytes()));
    const int forced = static_cast<int>(obs.run.splits_used);
    const RunResult z = runner.run(dc, forced), one = runner.run(dc, 1);
    if (z.ok() && one.ok()) {
      const Reference mean = naive_gpu_reference(dc);
      obs.zero.mean.assign(mean.out.begin(), mean.out.end());
      obs.zero.mean_abs.assign(mean.abs_pv.begin(), mean.abs_pv.end());
      obs.zero.multi = z.out;
      obs.zero.single = one.out;
      obs.zero.splits = static_cast<int>(z.splits_used);
    }
  }
  return obs;
}

std::string partly_visible_poison_problem(const Case& c, const Observation& obs, const References& refs) {
  if (!obs.poison.applies()) return "";
  if (!obs.poisoned.ok()) return obs.poison.label() + ": the poisoned run failed: " + obs.poisoned.problem(obs.api);
  return poisoned_draft_problem(c, *refs.ref, obs.poison, obs.run.out, obs.run.lse, obs.poisoned.out, obs.poisoned.lse);
}

std::string fp32_partials_problem(const Observation& obs) {
  if (!obs.zero.ran()) return "";
  return partials_problem(obs.zero.multi, obs.zero.single, obs.zero.mean, obs.zero.mean_abs, obs.zero.splits);
}

Outcome verify(const Case& c, const Observation& obs, const std::string& label, const References* given) {
  Outcome o;
  Verdict& v = o.verdict;
  const RunResult& res = obs.run;
  const bool cpu = obs.options.oracle != OracleChoice::kGiven && !obs.naive;
  // The comparison of the run, also where an earlier check decides, when it costs no CPU oracle.
  auto compare_run = [&] {
    if (o.compared) return;
    const References refs = references_for(c, obs, given, o);
    o.report = compare_to(c, refs, res.out, res.lse, label);
    o.compared = true;
  };
  auto fail = [&v](const std::string& verdict, const std::string& check, const std::string& detail) {
    v.verdict = verdict;
    v.check = check;
    v.detail = detail;
  };
  const bool faulted = !obs.fault.kind.empty();
  v.oracle = obs.oracle.empty() && given ? given->oracle : obs.oracle;
  v.device_error = res.device_error;
  if (res.status != VATTN_OK) {
    fail("refused", "run() status",
         std::string("run() returned status ") + std::to_string(res.status) + " on valid input");
  } else if (!obs.contract.empty()) {
    fail("wrong", property_name(Property::kArgumentContract), obs.contract);
  } else if (!res.guard_violations.empty()) {
    fail("guard", "guard bands", res.guard_violations.front());
  } else if (faulted) {
    const std::string fault = std::string(property_name(Property::kInjectedFault)) + " " + obs.fault.kind;
    if ((res.device_error & obs.fault.expect) == 0) {
      fail("wrong", fault + ": error word",
           "device error word " + hex(res.device_error) + " lacks the expected bits " + hex(obs.fault.expect));
    } else if (obs.fault.request >= 0) {
      const References refs = references_for(c, obs, given, o);
      std::vector<float> out = res.out, lse = res.lse;
      const std::string bad = fault_rows_problem(c, obs.fault, *refs.ref, out, lse);
      if (!bad.empty()) {
        fail("wrong", fault + ": rows not NaN", bad);
      } else if (obs.fault.others_right) {
        // Held to the oracle without the yardstick: the stand-in rows are the oracle's own.
        const uint32_t word = v.device_error;
        v = compare_verdict(c, {refs.ref, nullptr, refs.oracle}, out, lse, label, &o.report);
        o.compared = true;
        v.device_error = word;  // the error-word path this case reached (coverage)
        if (v.failed()) v.check = fault + ": other rows vs oracle";
      }
    }
  } else if (res.device_error != 0) {
    fail("device-error", "device error word", "device error word " + hex(res.device_error) + " on valid input");
  } else {
    const References refs = references_for(c, obs, given, o);
    v = compare_verdict(c, refs, res.out, res.lse, label, &o.report);
    o.compared = true;
    v.device_error = res.device_error;
    std::string bad;
    if (!v.failed() && !(bad = partly_visible_poison_problem(c, obs, refs)).empty())
      fail("wrong", property_name(Property::kPartlyVisiblePoison), bad);
    if (!v.failed() && !(bad = fp32_partials_problem(obs)).empty())
      fail("wrong", property_name(Property::kFp32Partials), bad);
  }
  if (!faulted && !cpu && (given || obs.naive)) compare_run();  // e.g. the GPU tests' report of a refused run
  return o;
}

void write_evidence(const Case& c, const Observation& obs, Outcome& outcome, const std::string& path,
                    const std::string& target, const std::string& note, const References* given) {
  const References refs = references_for(c, obs, given, outcome);
  if (outcome.verdict.check == property_name(Property::kPartlyVisiblePoison) && outcome.ref64 && obs.poisoned.ok()) {
    // (A case judged by the naive GPU oracle keeps the clean case: that oracle runs on the device,
    // and evidence is written on any thread.)
    Case pc = c;
    std::copy(obs.poison.row.begin(), obs.poison.row.end(),
              pc.kv_draft.begin() + static_cast<std::ptrdiff_t>(obs.poison.kv_draft_row(c) * c.d_qk));
    const Reference pref = oracle_fp64(pc);
    write_repro_file(pc, path, target, &pref, kOracleFp64, &obs.poisoned.out, &obs.poisoned.lse,
                     note + " (this file holds the poisoned case)");
    return;
  }
  write_repro_file(c, path, target, refs.ref, refs.oracle, &obs.run.out, &obs.run.lse, note);
}

CaseResult run_and_verify(const Revision& rev, const Case& c, const Options& options, const std::string& label,
                          int plan_splits, const References* refs, const Recipe::PlanLimits& limits) {
  std::string beyond = beyond_capabilities(rev, c);
  const vattn_limits plan =
      limits.set() ? plan_limits(limits, c.num_heads) : limits_for(c, std::max(options.splits, plan_splits));
  if (beyond.empty() && limits.set()) {
    vattn_caps caps{};
    if (rev.api->capabilities(&caps) == VATTN_OK) beyond = limits_beyond(caps, plan);
    if (!beyond.empty()) beyond = "the recipe's plan limits: " + beyond;
  }
  if (!beyond.empty()) throw Unsupported(beyond);
  DeviceCase dc(c);
  Testbed tb(rev, plan);
  CaseResult r;
  r.obs = tb.run(dc, c, options);
  r.outcome = verify(c, r.obs, label, refs);
  return r;
}

CaseResult replay_kernel(const Revision& rev, const Case& c, int forced_splits, const References& refs,
                         const CasePlan& plan) {
  Options o;
  o.splits = forced_splits;
  o.oracle = OracleChoice::kGiven;
  o.plan = plan.gpu;
  std::string label = "kernel:" + rev.name();
  if (plan.gpu.set()) label += " " + plan.gpu.describe();
  return run_and_verify(rev, c, o, label, 16, &refs, plan.limits);
}

}  // namespace vattn::testbed
