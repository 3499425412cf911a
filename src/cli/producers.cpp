#include "producers.h"

#include "bf16.h"
#include "cuda_check.h"

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

// The GPU kernel's slot. It reports why it cannot run; the GPU build replaces it with a
// producer that runs the revision chosen by ProducerOptions::kernel.
class KernelSlot : public LiveProducer {
 public:
  std::string name() const override { return "kernel"; }
  std::string unavailable_reason() const override {
    if (cuda_device_count() == 0) return "no CUDA device";
    return "no kernel producer is registered in this build (src/cli/producers.cpp)";
  }
  void run(const ReplayContext&, std::vector<float>&, std::vector<float>&) override {
    throw std::logic_error("kernel slot has no producer to run");
  }
};

}  // namespace

std::vector<std::unique_ptr<LiveProducer>> make_live_producers(const ProducerOptions& options) {
  std::vector<std::unique_ptr<LiveProducer>> list;
  if (options.bf16_reference) list.push_back(std::make_unique<Bf16ReferenceProducer>());
  list.push_back(std::make_unique<KernelSlot>());
  return list;
}

}  // namespace vattn::cli
