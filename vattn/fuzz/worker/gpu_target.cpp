// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/worker/gpu_target.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>

#include <cuda_runtime.h>

#include "vattn/fuzz/worker/runner_cache.h"
#include "vattn/gpu/cuda_check.h"
#include "vattn/gpu/device_case.h"
#include "vattn/gpu/kernel_runner.h"
#include "vattn/gpu/naive_runner.h"
#include "vattn/gpu/revision.h"
#include "vattn/gpu/staged_upload.h"
#include "vattn/testbed/plan.h"
#include "vattn/testbed/repro.h"
#include "vattn/testbed/testbed.h"

namespace vattn::fuzz {

namespace {

// A diagnostic switch: set to anything but "" or "0".
bool env_switch(const char* name) {
  const char* e = std::getenv(name);
  return e != nullptr && *e != '\0' && std::string(e) != "0";
}

// The fp32-partials property (vattn/testbed/partials.h) applies where the means are of plain data.
bool zero_q_applies(const Recipe& r) { return r.profile == "uniform" || r.profile == "k26" || r.profile == "ties"; }

class GpuTarget : public Target {
 public:
  GpuTarget(Revision rev, GenBudget envelope) : rev_(std::move(rev)), envelope_(std::move(envelope)) {
    cudaDeviceProp prop{};
    VATTN_CUDA(cudaGetDeviceProperties(&prop, 0));
    device_ = prop.name;
  }
  std::string name() const override { return rev_.name(); }
  json phase_seconds() const override {
    return {{"upload", upload_s_.load()},
            {"naive oracle", oracle_s_.load()},
            {"kernel runs", kernel_s_.load()},
            {"fp32-partials runs", zero_s_.load()},
            {"staged upload (pool threads)", staged_s_.load()}};
  }
  std::string device() const override { return device_; }
  bool device_variants() const override { return true; }
  bool plan_hook() const override { return rev_.plan_for != nullptr; }

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
    if (testbed::case_work(c) <= testbed::kCpuOracleMaxWork) {
      const Reference ref = oracle_fp64(c);
      testbed::write_repro_file(c, path, name(), &ref, testbed::kOracleFp64, nullptr, nullptr, note);
      return;
    }
    DeviceCase dc(c);
    const Reference ref = naive_gpu_reference(dc);
    testbed::write_repro_file(c, path, name(), &ref, testbed::kNaiveGpuOracle, nullptr, nullptr, note);
  }

 private:
  KernelRunner& runner_for(const Case& c, const Recipe& r) {
    const vattn_limits l = target_limits(r, envelope_, c.num_heads);
    if (!r.limits.set()) {
      // Planned once per head count at the stream's limits, then reused: what a server does.
      auto it = runners_.find(c.num_heads);
      if (it != runners_.end()) return it->second;
      return runners_.emplace(c.num_heads, KernelRunner(rev_, l)).first->second;
    }
    // The recipe's own limits: one plan per (heads, limits), the least recently used dropped.
    return recipe_runners_.get(limits_key(l), [&] { return recipe_runner(l); });
  }

  // A plan at a recipe's limits. Limits the revision declares it cannot plan, or whose workspace
  // the device cannot hold, are the recipe's problem (InputError: nothing runs); limits within
  // its capabilities that workspace_size() refuses are the revision's.
  KernelRunner recipe_runner(const vattn_limits& l) {
    vattn_caps caps{};
    if (rev_.api->capabilities(&caps) == VATTN_OK) {
      const std::string beyond = testbed::limits_beyond(caps, l);
      if (!beyond.empty())
        throw InputError("", "", "limits", "the plan limits are beyond the revision's capabilities: " + beyond);
    }
    size_t bytes = 0;
    const vattn_status st = rev_.api->workspace_size(&l, &bytes);
    if (st != VATTN_OK) {
      throw std::runtime_error(
          std::string("workspace_size() refuses plan limits within the revision's capabilities: ") +
          rev_.api->status_string(st));
    }
    // Half of what is free: the case, the naive oracle and the properties' runs need the rest.
    size_t free_bytes = 0, total_bytes = 0;
    VATTN_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (bytes > free_bytes / 2) {
      throw InputError("", "", "limits",
                       "the plan limits need a workspace of " + std::to_string(bytes >> 20) + " MiB; the device has " +
                           std::to_string(free_bytes >> 20) + " MiB free");
    }
    return KernelRunner(rev_, l);
  }

  testbed::FaultPlan inject(DeviceCase& dc, const Case& c, const Recipe& r, const vattn_limits& limits) {
    testbed::FaultPlan f;
    f.kind = r.fault;
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

  // The options this worker chooses for a case; the testbed does the rest.
  testbed::Options options_for(const Case& c, const Recipe& r) {
    using testbed::Property;
    testbed::Options o;
    o.splits = r.splits;
    o.seed = r.seed;
    o.plan = testbed::case_plan(r).gpu;
    const bool faulted = r.fault != "none";
    // Large work, a relocated pool or a planted fault: the naive GPU oracle, which reads the case
    // as it is on the device.
    const bool gpu_oracle = faulted || r.slot_base > 0 || testbed::case_work(c) > testbed::kCpuOracleMaxWork;
    o.oracle = gpu_oracle ? testbed::OracleChoice::kNaiveGpu : testbed::OracleChoice::kCpu;
    if (faulted) {
      o.properties.add(Property::kInjectedFault);
      o.inject = [this, &c, r](DeviceCase& dc, const KernelRunner& runner) {
        return inject(dc, c, r, runner.limits());
      };
      return o;
    }
    // Every case that has a partly visible draft: one KV row up and back, one more kernel run.
    o.properties.add(Property::kPartlyVisiblePoison);
    // One case in eight: host-side calls that return at once, and one small download.
    if (r.seed % 8 == 3) o.properties.add(Property::kArgumentContract);
    // Every short case that qualifies; one long case in four (its two extra runs and oracle pass
    // would otherwise cost a third of a long case's time).
    if ((!gpu_oracle || r.seed % 4 == 0) && zero_q_applies(r)) o.properties.add(Property::kFp32Partials);
    return o;
  }

  Check run_on_device(const Case& c, const Recipe& r, std::shared_ptr<DeviceCase> dc) {
    testbed::Testbed tb(runner_for(c, r));
    if (!dc) {
      Phase p(upload_s_);
      dc = std::make_shared<DeviceCase>(c);
      if (r.slot_base > 0) dc->relocate_pool(r.slot_base);
    }
    auto obs = std::make_shared<testbed::Observation>(tb.run(*dc, c, options_for(c, r)));
    add(oracle_s_, obs->oracle_s);
    add(kernel_s_, obs->kernel_s);
    add(zero_s_, obs->partials_s);
    const std::string target = name();
    // The closure keeps the device case: it is freed on the pool thread that checks it
    // (cudaFree waits for the device), not on the main thread.
    return [&c, obs, target, dc](const ReproRequest& repro) {
      testbed::Outcome o = testbed::verify(c, *obs, target);
      Verdict v = o.verdict;
      repro.write(v, [&](const std::string& path) {
        testbed::write_evidence(c, *obs, o, path, target, v.signature() + ": " + v.detail);
      });
      return v;
    };
  }

  // Pool threads add to the same total: a compare-exchange loop, no lost seconds.
  static void add(std::atomic<double>& total, double dt) {
    double seen = total.load();
    while (!total.compare_exchange_weak(seen, seen + dt)) {
    }
  }
  // Seconds per phase of run(), read by the heartbeat thread.
  class Phase {
   public:
    explicit Phase(std::atomic<double>& total) : total_(total), t0_(std::chrono::steady_clock::now()) {}
    ~Phase() { add(total_, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count()); }

   private:
    std::atomic<double>& total_;
    std::chrono::steady_clock::time_point t0_;
  };
  std::atomic<double> upload_s_{0}, oracle_s_{0}, kernel_s_{0}, zero_s_{0}, staged_s_{0};
  Revision rev_;
  GenBudget envelope_;
  std::string device_;
  static constexpr size_t kRecipeRunners = 32;  // plans at recipes' own limits kept at once
  std::map<int, KernelRunner> runners_;         // at the stream's limits, by head count
  LruCache<LimitsKey, KernelRunner> recipe_runners_{kRecipeRunners};
};

}  // namespace

std::unique_ptr<Target> make_gpu_target(const TargetOptions& options) {
  Revision rev = load_revision(options.spec);
  if (cuda_device_count() == 0)
    throw InputError("", "", "--kernel", "no CUDA device is visible: GPU revisions cannot run here");
  return std::make_unique<GpuTarget>(std::move(rev), options.envelope);
}

}  // namespace vattn::fuzz
