// SPDX-License-Identifier: Apache-2.0
#include "vattn/cli/producers.h"

#include "vattn/case/bf16.h"
#include "vattn/cli/commands.h"
#if VATTN_HAVE_CUDA
#include "vattn/gpu/cuda_check.h"
#include "vattn/testbed/testbed.h"
#endif

namespace vattn::cli {

namespace {

// The bf16-emulating CPU reference as a producer: what a correct fast kernel may return.
// Replaying it shows the tolerance model accepts a correct result on this very case.
class Bf16ReferenceProducer : public LiveProducer {
 public:
  std::string name() const override { return "reference_bf16_emulated"; }
  std::string unavailable_reason() const override { return ""; }
  CompareReport check(const ReplayContext& ctx) override {
    std::vector<float> out(ctx.bf16ref.out.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = round_to_bf16(static_cast<float>(ctx.bf16ref.out[i]));
    const std::vector<float> lse(ctx.bf16ref.lse.begin(), ctx.bf16ref.lse.end());
    return testbed::compare_to(ctx.c, ctx.refs, out, lse, name());
  }
};

#if VATTN_HAVE_CUDA
// A kernel revision (built in, or a library) on the GPU, through the testbed: outputs and
// workspace poisoned first, guard bands and the device error word checked after; any of those
// is a failed run.
class KernelProducer : public LiveProducer {
 public:
  // An unknown name or a bad library is a usage error, GPU or not (loading runs no CUDA call).
  explicit KernelProducer(const std::string& spec) : rev_(load_revision(spec)), has_gpu_(cuda_device_count() > 0) {}
  std::string name() const override { return "kernel:" + rev_.name(); }
  std::string unavailable_reason() const override { return has_gpu_ ? "" : "no CUDA device"; }
  CompareReport check(const ReplayContext& ctx) override {
    testbed::CaseResult r;
    if (ctx.plan.limits.set() && ctx.forced_splits > ctx.plan.limits.max_splits) {
      throw InputError("", "", "--splits",
                       std::to_string(ctx.forced_splits) + " splits exceed the recipe's plan limits (max_splits " +
                           std::to_string(ctx.plan.limits.max_splits) + ")");
    }
    try {
      r = testbed::replay_kernel(rev_, ctx.c, ctx.forced_splits, ctx.refs, ctx.plan);
    } catch (const testbed::Unsupported& e) {
      throw CaseNotSupported(e.what());
    }
    if (!r.obs.run.ok()) throw std::runtime_error(r.obs.run.problem(rev_.api));
    return r.outcome.report;
  }

 private:
  Revision rev_;
  bool has_gpu_;
};
#else
// A build without CUDA: the kernel is listed, and never runs (replay --kernel exits 2 saying why).
class KernelProducer : public LiveProducer {
 public:
  explicit KernelProducer(const std::string& spec) : spec_(spec) {}
  std::string name() const override { return "kernel:" + spec_; }
  std::string unavailable_reason() const override { return kNoCuda; }
  CompareReport check(const ReplayContext&) override {
    throw std::runtime_error(std::string("kernel:") + spec_ + ": " + kNoCuda);
  }

 private:
  std::string spec_;
};
#endif

}  // namespace

std::vector<std::unique_ptr<LiveProducer>> make_live_producers(const ProducerOptions& options) {
  std::vector<std::unique_ptr<LiveProducer>> list;
  if (options.bf16_reference) list.push_back(std::make_unique<Bf16ReferenceProducer>());
  list.push_back(std::make_unique<KernelProducer>(options.kernel.empty() ? VATTN_REVISION_DEFAULT : options.kernel));
  return list;
}

}  // namespace vattn::cli
