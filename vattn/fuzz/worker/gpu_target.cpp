// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/worker/gpu_target.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

#include <cuda_runtime.h>

#include "vattn/case/bf16.h"
#include "vattn/fuzz/worker/contract_check.h"
#include "vattn/gpu/cuda_check.h"
#include "vattn/gpu/device_case.h"
#include "vattn/check/draft_poison.h"
#include "vattn/gpu/kernel_runner.h"
#include "vattn/gpu/naive_runner.h"
#include "vattn/fuzz/worker/partials_check.h"
#include "vattn/gpu/revision.h"
#include "vattn/gpu/staged_upload.h"
#include "vattn/fuzz/worker/verify.h"

namespace vattn::fuzz {

namespace {

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

// A diagnostic switch: set to anything but "" or "0".
bool env_switch(const char* name) {
  const char* e = std::getenv(name);
  return e != nullptr && *e != '\0' && std::string(e) != "0";
}

// The fp32-partials property (partials_check.h) applies where the means are of plain data.
bool zero_q_applies(const Recipe& r) { return r.profile == "uniform" || r.profile == "k26" || r.profile == "ties"; }

struct FaultPlan {
  uint32_t expect = 0;   // error bits of which at least one must be set
  int request = -1;      // whose rows must come out NaN (-1: none checked)
  bool others_right = true;  // the other requests' rows must still match the oracle
};

// Outputs are filled with this byte before a faulted run (0x3f3f as bf16 and 0x3f3f3f3f as fp32
// are about 0.75): the rows the fault affects must then be written as NaN by the kernel, where the
// usual NaN poison would let a kernel that writes nothing pass.
constexpr unsigned char kFaultedOutputFill = 0x3f;

class GpuTarget : public Target {
 public:
  GpuTarget(Revision rev, GenBudget envelope) : rev_(std::move(rev)), envelope_(std::move(envelope)) {
    cudaDeviceProp prop{};
    VATTN_CUDA(cudaGetDeviceProperties(&prop, 0));
    device_ = prop.name;
  }
  std::string name() const override { return rev_.name(); }
  json phase_seconds() const override {
    return {{"upload", upload_s_.load()}, {"naive oracle", oracle_s_.load()}, {"kernel runs", kernel_s_.load()},
            {"fp32-partials runs", zero_s_.load()}, {"staged upload (pool threads)", staged_s_.load()}};
  }
  std::string device() const override { return device_; }
  bool device_variants() const override { return true; }

  // The inputs go up on the pool thread that generated the case, through a staging stream of
  // its own, while the main thread runs other cases. A relocated pool (a few percent of cases,
  // gigabytes each) is built on the main thread when it runs; so is anything prepare() failed at.
  // VATTN_FUZZ_PLAIN_UPLOAD=1 uploads on the main thread as before (for A/B measurements).
  std::shared_ptr<void> prepare(const Case& c, const Recipe& r) noexcept override {
    static const bool plain = env_switch("VATTN_FUZZ_PLAIN_UPLOAD");
    if (plain || r.slot_base > 0) return nullptr;
    try {
      thread_local std::unique_ptr<StagedUpload> up;
      Phase p(staged_s_);
      if (!up) up = std::make_unique<StagedUpload>();
      return std::make_shared<DeviceCase>(c, *up);
    } catch (const std::exception&) {
      return nullptr;  // e.g. out of device memory for now: run() uploads it the plain way
    }
  }

  Check run(const Case& c, const Recipe& r, std::shared_ptr<void> prepared) override {
    try {
      return run_on_device(c, r, std::static_pointer_cast<DeviceCase>(std::move(prepared)));
    } catch (const CudaError& e) {
      // After an illegal address (or any launch failure) the context is dead: report and go.
      throw DeviceLost(std::string("CUDA error: ") + e.what());
    }
  }

  void write_repro(const Case& c, const std::string& path, const std::string& note) override {
    if (recipe_work(Recipe::parse(c.recipe)) <= kCpuOracleMaxWork) {
      const Reference ref = oracle_fp64(c);
      write_repro_file(c, path, name(), &ref, "oracle_fp64", nullptr, nullptr, note);
      return;
    }
    DeviceCase dc(c);
    const Reference ref = naive_gpu_reference(dc);
    write_repro_file(c, path, name(), &ref, "naive_gpu_oracle", nullptr, nullptr, note);
  }

 private:
  KernelRunner& runner_for(int heads) {
    auto it = runners_.find(heads);
    if (it != runners_.end()) return it->second;
    // Planned once per head count at the stream's limits, then reused: what a server does.
    vattn_limits l{};
    l.max_requests = envelope_.max_batch;
    l.max_total_drafts = envelope_.max_total_drafts;
    l.max_drafts_per_request = envelope_.max_drafts;
    l.num_heads = heads;
    l.max_splits = std::max(1, envelope_.max_splits);
    return runners_.emplace(heads, KernelRunner(rev_, l)).first->second;
  }

  FaultPlan inject(DeviceCase& dc, const Case& c, const Recipe& r, const vattn_limits& limits) {
    FaultPlan f;
    const int B = c.num_requests();
    if (r.fault == "drafts-over") {
      // The last request claims one draft more than the plan allows; n_q (host-known) is unchanged.
      const int32_t over = c.qo_indptr[static_cast<size_t>(B) - 1] + limits.max_drafts_per_request + 1;
      VATTN_CUDA(cudaMemcpy(dc.qo_indptr.as<int32_t>() + B, &over, sizeof over, cudaMemcpyHostToDevice));
      f.expect = VATTN_DEVERR_LIMITS | VATTN_DEVERR_INDPTR;
      // The request over the limit is affected; whether a revision also stops the others (split-v1
      // makes every row NaN) is its choice (docs/verify-attention.md, device errors).
      f.request = B - 1;
      f.others_right = false;
      return f;
    }
    std::vector<int> with_prefix;
    for (int b = 0; b < B; ++b)
      if (c.prefix_len(b) > 0) with_prefix.push_back(b);
    if (with_prefix.empty()) return f;  // nothing to break: the stream draws index faults only with a prefix
    f.request = with_prefix[r.seed % with_prefix.size()];
    const int64_t pos = c.kv_indptr[static_cast<size_t>(f.request)] +
                        static_cast<int64_t>((r.seed >> 16) % static_cast<uint64_t>(c.prefix_len(f.request)));
    int64_t bad = dc.n_slots();
    if (r.fault == "index-neg") bad = -1;
    if (r.fault == "index-max") bad = INT32_MAX;
    const int32_t v = static_cast<int32_t>(std::min<int64_t>(bad, INT32_MAX));
    VATTN_CUDA(cudaMemcpy(dc.kv_indices.as<int32_t>() + pos, &v, sizeof v, cudaMemcpyHostToDevice));
    f.expect = VATTN_DEVERR_KV_INDEX;
    return f;
  }

  Check run_on_device(const Case& c, const Recipe& r, std::shared_ptr<DeviceCase> dc) {
    KernelRunner& runner = runner_for(c.num_heads);
    if (!dc) {
      Phase p(upload_s_);
      dc = std::make_shared<DeviceCase>(c);
      if (r.slot_base > 0) dc->relocate_pool(r.slot_base);
    }
    const bool faulted = r.fault != "none";
    const bool gpu_oracle = faulted || r.slot_base > 0 || recipe_work(r) > kCpuOracleMaxWork;
    auto naive = std::make_shared<Reference>();
    if (gpu_oracle) {
      Phase p(oracle_s_);
      *naive = naive_gpu_reference(*dc);
    }
    // The argument-contract property (contract_check.h) on one case in eight: host-side calls
    // that return at once, and one small download.
    std::string contract;
    if (!faulted && r.seed % 8 == 3) {
      Phase p(kernel_s_);
      contract = argument_contract_problem(runner, *dc);
    }
    const FaultPlan fault = faulted ? inject(*dc, c, r, runner.limits()) : FaultPlan{};
    std::shared_ptr<RunResult> res;
    {
      Phase p(kernel_s_);
      res = std::make_shared<RunResult>(runner.run(*dc, r.splits, nullptr, faulted ? kFaultedOutputFill : 0xFF));
    }
    // The partly-visible-poison property (draft_poison.h) on every case that has such a draft:
    // one KV row up and back, one more kernel run.
    auto poison = std::make_shared<DraftPoison>();
    auto poisoned = std::make_shared<RunResult>();
    if (!faulted && res->ok()) {
      *poison = partly_visible_draft_poison(c, r.seed);
      if (poison->applies()) {
        Phase p(kernel_s_);
        uint16_t* row = dc->kv_draft.as<uint16_t>() + poison->kv_draft_row(c) * c.d_qk;
        const size_t bytes = poison->row.size() * sizeof(uint16_t);
        VATTN_CUDA(cudaMemcpy(row, poison->row.data(), bytes, cudaMemcpyHostToDevice));
        *poisoned = runner.run(*dc, r.splits);
        VATTN_CUDA(cudaMemcpy(row, &c.kv_draft[static_cast<size_t>(poison->kv_draft_row(c) * c.d_qk)], bytes,
                              cudaMemcpyHostToDevice));
      }
    }
    // The fp32-partials property on the same case with every query zero (see partials_problem).
    auto zero_out = std::make_shared<std::vector<float>>();
    auto zero_single = std::make_shared<std::vector<float>>();
    auto zero_ref = std::make_shared<std::vector<float>>(), zero_abs = std::make_shared<std::vector<float>>();
    int zero_splits = 0;
    // Every short case that qualifies; one long case in four (its two extra runs and oracle pass
    // would otherwise cost a third of a long case's time).
    const bool sampled = !gpu_oracle || r.seed % 4 == 0;
    if (!faulted && sampled && res->ok() && res->splits_used >= 2 && zero_q_applies(r)) {
      Phase p(zero_s_);
      VATTN_CUDA(cudaMemset(dc->q.data(), 0, dc->q.bytes()));
      const int forced = static_cast<int>(res->splits_used);
      const RunResult z = runner.run(*dc, forced), one = runner.run(*dc, 1);
      if (z.ok() && one.ok()) {
        const Reference mean = naive_gpu_reference(*dc);
        zero_ref->assign(mean.out.begin(), mean.out.end());
        zero_abs->assign(mean.abs_pv.begin(), mean.abs_pv.end());
        *zero_out = z.out;
        *zero_single = one.out;
        zero_splits = static_cast<int>(z.splits_used);
      }
    }
    const std::string target = name();
    // The closure keeps the device case: it is freed on the pool thread that checks it
    // (cudaFree waits for the device), not on the main thread.
    return [&c, r, res, naive, gpu_oracle, fault, zero_out, zero_single, zero_ref, zero_abs, zero_splits, target,
            dc, contract, poison, poisoned, rev_api = rev_.api](const ReproRequest& repro) {
      Verdict v;
      Reference ref64, bf16;
      const Reference* ref = naive.get();
      const Reference* yardstick = nullptr;
      auto references = [&] {
        if (gpu_oracle) return;
        ref64 = oracle_fp64(c);
        bf16 = reference_bf16_emulated(c);
        ref = &ref64;
        yardstick = &bf16;
      };
      const std::string oracle = gpu_oracle ? "naive_gpu_oracle" : "oracle_fp64";
      v.oracle = oracle;
      v.device_error = res->device_error;
      if (res->status != VATTN_OK) {
        v.verdict = "refused";
        v.check = "run() status";
        v.detail = std::string("run() returned status ") + std::to_string(res->status) + " on valid input";
      } else if (!contract.empty()) {
        v.verdict = "wrong";
        v.check = "argument contract";
        v.detail = contract;
      } else if (!res->guard_violations.empty()) {
        v.verdict = "guard";
        v.check = "guard bands";
        v.detail = res->guard_violations.front();
      } else if (r.fault != "none") {
        if ((res->device_error & fault.expect) == 0) {
          v.verdict = "wrong";
          v.check = "fault " + r.fault + ": error word";
          v.detail = "device error word " + hex(res->device_error) + " lacks the expected bits " + hex(fault.expect);
        } else if (fault.request >= 0) {
          // The broken request's rows must be NaN; every other row must still be right.
          const int64_t H = c.num_heads, dv = c.d_v;
          const int64_t q0 = c.qo_indptr[static_cast<size_t>(fault.request)],
                        q1 = c.qo_indptr[static_cast<size_t>(fault.request) + 1];
          std::vector<float> out = res->out, lse = res->lse;
          for (int64_t row = q0 * H; row < q1 * H && v.verdict == "pass"; ++row) {
            if (!std::isnan(lse[static_cast<size_t>(row)])) {
              v.verdict = "wrong";
              v.check = "fault " + r.fault + ": rows not NaN";
              v.detail = "request " + std::to_string(fault.request) + " row " + std::to_string(row / H - q0) + " head " +
                         std::to_string(row % H) + ": lse " + std::to_string(lse[static_cast<size_t>(row)]) +
                         " after a broken kv index (expected NaN)";
            }
            for (int64_t d = 0; d < dv && v.verdict == "pass"; ++d) {
              if (!std::isnan(out[static_cast<size_t>(row * dv + d)])) {
                v.verdict = "wrong";
                v.check = "fault " + r.fault + ": rows not NaN";
                v.detail = "request " + std::to_string(fault.request) + " row " + std::to_string(row / H - q0) +
                           " column " + std::to_string(d) + " is finite after a broken kv index (expected NaN)";
              }
            }
            // Stand in the reference's values so the comparison below judges the other rows only.
            lse[static_cast<size_t>(row)] = static_cast<float>(ref->lse[static_cast<size_t>(row)]);
            for (int64_t d = 0; d < dv; ++d)
              out[static_cast<size_t>(row * dv + d)] = static_cast<float>(ref->out[static_cast<size_t>(row * dv + d)]);
          }
          if (v.verdict == "pass" && fault.others_right) {
            v = compare_verdict(c, *ref, nullptr, out, lse, oracle, target);
            v.device_error = res->device_error;  // the error-word path this case reached (coverage)
            if (v.failed()) v.check = "fault " + r.fault + ": other rows vs oracle";
          }
        }
      } else if (res->device_error != 0) {
        v.verdict = "device-error";
        v.check = "device error word";
        v.detail = "device error word " + hex(res->device_error) + " on valid input";
      } else {
        references();
        v = compare_verdict(c, *ref, yardstick, res->out, res->lse, oracle, target);
        v.device_error = res->device_error;
        if (!v.failed() && poison->applies()) {
          std::string bad;
          if (!poisoned->ok()) {
            bad = poison->label() + ": the poisoned run failed: " + poisoned->problem(rev_api);
          } else {
            bad = poisoned_draft_problem(c, *ref, *poison, res->out, res->lse, poisoned->out, poisoned->lse);
          }
          if (!bad.empty()) {
            v.verdict = "wrong";
            v.check = "partly visible poison";
            v.detail = bad;
          }
        }
        if (!v.failed() && !zero_out->empty()) {
          const std::string bad = partials_problem(*zero_out, *zero_single, *zero_ref, *zero_abs, zero_splits);
          if (!bad.empty()) {
            v.verdict = "wrong";
            v.check = "fp32 partials";
            v.detail = bad;
          }
        }
      }
      if (repro.wanted(v)) {
        if (ref->out.empty()) references();
        if (v.check == "partly visible poison" && !gpu_oracle && poisoned->ok()) {
          // The evidence is the poisoned case: its inputs, its float64 oracle and the kernel's
          // output on it, so `vattn replay` of the file fails where the rows moved. (A large case
          // keeps the clean one: its oracle is the naive GPU one, run on the main thread only.)
          Case pc = c;
          std::copy(poison->row.begin(), poison->row.end(),
                    pc.kv_draft.begin() + static_cast<std::ptrdiff_t>(poison->kv_draft_row(c) * c.d_qk));
          const Reference pref = oracle_fp64(pc);
          write_repro_file(pc, repro.path, target, &pref, "oracle_fp64", &poisoned->out, &poisoned->lse,
                           v.signature() + ": " + v.detail + " (this file holds the poisoned case)");
        } else {
          write_repro_file(c, repro.path, target, ref, oracle, &res->out, &res->lse, v.signature() + ": " + v.detail);
        }
        v.repro = repro.path;
      }
      return v;
    };
  }

  // Seconds per phase of run(), read by the heartbeat thread.
  class Phase {
   public:
    explicit Phase(std::atomic<double>& total) : total_(total), t0_(std::chrono::steady_clock::now()) {}
    ~Phase() {  // pool threads add to the same total: a compare-exchange loop, no lost seconds
      const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
      double seen = total_.load();
      while (!total_.compare_exchange_weak(seen, seen + dt)) {
      }
    }
   private:
    std::atomic<double>& total_;
    std::chrono::steady_clock::time_point t0_;
  };
  std::atomic<double> upload_s_{0}, oracle_s_{0}, kernel_s_{0}, zero_s_{0}, staged_s_{0};
  Revision rev_;
  GenBudget envelope_;
  std::string device_;
  std::map<int, KernelRunner> runners_;
};

}  // namespace

std::unique_ptr<Target> make_gpu_target(const TargetOptions& options) {
  Revision rev = load_revision(options.spec);
  if (cuda_device_count() == 0) throw InputError("", "", "--kernel", "no CUDA device is visible: GPU revisions cannot run here");
  return std::make_unique<GpuTarget>(std::move(rev), options.envelope);
}

}  // namespace vattn::fuzz
