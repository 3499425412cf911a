#include "producers.h"

#include "bf16.h"
#include "cuda_check.h"
#include "kernel_runner.h"

namespace vattn::cli {

namespace {

// The bf16-emulating CPU reference as a producer: what a correct fast kernel may return.
// Replaying it shows the tolerance model accepts a correct result on this very case.
class Bf16ReferenceProducer : public LiveProducer {
 public:
  std::string name() const override { return "reference_bf16_emulated"; }
  std::string unavailable_reason() const override { return ""; }
  void run(const ReplayContext& ctx, std::vector<float>& out, std::vector<float>& lse) override {
    out.resize(ctx.bf16ref.out.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = round_to_bf16(static_cast<float>(ctx.bf16ref.out[i]));
    lse.assign(ctx.bf16ref.lse.begin(), ctx.bf16ref.lse.end());
  }
};

// A kernel revision (built in, or a library) on the GPU: outputs and workspace poisoned
// first, guard bands and the device error word checked after; any of those is a failed run.
class KernelProducer : public LiveProducer {
 public:
  // An unknown name or a bad library is a usage error, GPU or not (loading runs no CUDA call).
  explicit KernelProducer(const std::string& spec) : rev_(load_revision(spec)), has_gpu_(cuda_device_count() > 0) {}
  std::string name() const override { return "kernel:" + rev_.name(); }
  std::string unavailable_reason() const override { return has_gpu_ ? "" : "no CUDA device"; }
  void run(const ReplayContext& ctx, std::vector<float>& out, std::vector<float>& lse) override {
    DeviceCase dc(ctx.c);
    KernelRunner runner(rev_, limits_for(ctx.c, ctx.forced_splits > 16 ? ctx.forced_splits : 16));
    RunResult r = runner.run(dc, ctx.forced_splits);
    if (!r.ok()) throw std::runtime_error(r.problem(rev_.api));
    out = std::move(r.out);
    lse = std::move(r.lse);
  }

 private:
  Revision rev_;
  bool has_gpu_;
};

}  // namespace

std::vector<std::unique_ptr<LiveProducer>> make_live_producers(const ProducerOptions& options) {
  std::vector<std::unique_ptr<LiveProducer>> list;
  if (options.bf16_reference) list.push_back(std::make_unique<Bf16ReferenceProducer>());
  list.push_back(std::make_unique<KernelProducer>(options.kernel.empty() ? "split-v1" : options.kernel));
  return list;
}

}  // namespace vattn::cli
