// SPDX-License-Identifier: Apache-2.0
#include "vattn/cli/producers.h"

#include "vattn/case/bf16.h"
#include "vattn/cli/commands.h"
#if VATTN_HAVE_CUDA
#include "vattn/gpu/cuda_check.h"
#include "vattn/gpu/kernel_runner.h"
#endif

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

#if VATTN_HAVE_CUDA
// A kernel revision (built in, or a library) on the GPU: outputs and workspace poisoned
// first, guard bands and the device error word checked after; any of those is a failed run.
class KernelProducer : public LiveProducer {
 public:
  // An unknown name or a bad library is a usage error, GPU or not (loading runs no CUDA call).
  explicit KernelProducer(const std::string& spec) : rev_(load_revision(spec)), has_gpu_(cuda_device_count() > 0) {}
  std::string name() const override { return "kernel:" + rev_.name(); }
  std::string unavailable_reason() const override { return has_gpu_ ? "" : "no CUDA device"; }
  void run(const ReplayContext& ctx, std::vector<float>& out, std::vector<float>& lse) override {
    const std::string unsupported = beyond_capabilities(ctx.c);
    if (!unsupported.empty()) throw CaseNotSupported(unsupported);
    DeviceCase dc(ctx.c);
    KernelRunner runner(rev_, limits_for(ctx.c, ctx.forced_splits > 16 ? ctx.forced_splits : 16));
    RunResult r = runner.run(dc, ctx.forced_splits);
    if (!r.ok()) throw std::runtime_error(r.problem(rev_.api));
    out = std::move(r.out);
    lse = std::move(r.lse);
  }

 private:
  // "" when the revision's capabilities cover the case, else what is beyond them.
  std::string beyond_capabilities(const Case& c) const {
    vattn_caps caps{};
    if (rev_.api->capabilities(&caps) != VATTN_OK) return "the revision reports no capabilities";
    auto over = [](const char* what, int64_t have, int64_t most) {
      return what + std::string(" = ") + std::to_string(have) + " > " + std::to_string(most);
    };
    if (c.d_qk != caps.d_qk || c.d_v != caps.d_v)
      return "d_qk/d_v = " + std::to_string(c.d_qk) + "/" + std::to_string(c.d_v) + ", the revision implements " +
             std::to_string(caps.d_qk) + "/" + std::to_string(caps.d_v);
    if (c.num_heads > caps.max_heads) return over("H", c.num_heads, caps.max_heads);
    if (c.num_requests() > caps.max_requests) return over("B", c.num_requests(), caps.max_requests);
    for (int b = 0; b < c.num_requests(); ++b) {
      if (c.drafts(b) > caps.max_drafts_per_request)
        return over(("T_" + std::to_string(b)).c_str(), c.drafts(b), caps.max_drafts_per_request);
      if (c.prefix_len(b) > caps.max_prefix) return over(("P_" + std::to_string(b)).c_str(), c.prefix_len(b), caps.max_prefix);
    }
    return "";
  }

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
  void run(const ReplayContext&, std::vector<float>&, std::vector<float>&) override {
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
  list.push_back(std::make_unique<KernelProducer>(options.kernel.empty() ? "split-v1" : options.kernel));
  return list;
}

}  // namespace vattn::cli
