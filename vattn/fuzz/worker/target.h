// SPDX-License-Identifier: Apache-2.0
// What a fuzz worker runs cases against: a kernel revision on a GPU, or a host target (the
// bf16-emulating CPU reference, or a deliberately faulty one that tests of the supervisor use).
// A target splits each case in phases so a worker can overlap them:
//   prepare()  on a pool thread, once the case is generated, before the worker says `start`:
//              work that does not execute the code under test (the GPU target's uploads)
//   run()      on the worker's main thread, one case at a time: everything that executes the
//              code under test (and device-side oracles). A crash or hang here is the target's.
//   the Check  it returns, on any pool thread: CPU oracles and comparisons; it yields the Verdict
//              and, when the case failed and a path is given, writes the repro there (v.repro).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "vattn/case/case.h"
#include "vattn/fuzz/gen/gen_recipe.h"
#include "vattn/fuzz/protocol/protocol.h"
#include "vattn/gen/generate.h"

namespace vattn::fuzz {

// Where a failing check writes its evidence, unless its signature is one the campaign has
// evidence of already (a bug hit ten thousand times needs one repro file, not ten thousand).
struct ReproRequest {
  std::string path;  // "" = write none
  std::function<bool(const std::string& signature)> known;
  bool wanted(const Verdict& v) const { return v.failed() && !path.empty() && !(known && known(v.signature())); }
  // Writes v's evidence to `path` with `write_file` when wanted. The verdict is decided already:
  // a write that fails (a full disk, a file-size limit) leaves it as it is and says why in
  // v.evidence_error (the supervisor stops the campaign on it); v.repro names a file written whole.
  void write(Verdict& v, const std::function<void(const std::string& path)>& write_file) const;
};

using Check = std::function<Verdict(const ReproRequest& repro)>;

// Raised by run() when the device is unusable from now on (a sticky CUDA error): the worker
// reports the case as a crash and exits.
struct DeviceLost : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Target {
 public:
  virtual ~Target() = default;
  virtual std::string name() const = 0;
  virtual std::string device() const = 0;  // "host", or the GPU's name
  // Whether the stream may draw device-side variants (slot_base, fault) for this target.
  virtual bool device_variants() const = 0;
  // Whether it can run a case as another GPU would plan it (recipe keys sms, sm_blocks): a
  // revision with the test-only plan hook (kernels/vattn_abi.h). The worker's ready message
  // says it; a campaign whose stream draws such plans stops at a target without it.
  virtual bool plan_hook() const { return false; }
  // Phase zero (see above): its result goes to run(); nullptr when there is nothing to prepare
  // or it failed (run() then does the work itself). Must not throw.
  virtual std::shared_ptr<void> prepare(const Case& c, const Recipe& r) noexcept {
    (void)c;
    (void)r;
    return nullptr;
  }
  // Phase one (see above). The returned Check completes the verdict; its index is set by the worker.
  virtual Check run(const Case& c, const Recipe& r, std::shared_ptr<void> prepared) = 0;
  // Seconds spent so far in each phase of run() (e.g. upload, kernel, oracle), for the summary's
  // "where the time goes". Called from the heartbeat thread: implementations keep atomics.
  virtual json phase_seconds() const { return json::object(); }
  // The evidence of a failure that left no result (a crash or hang): inputs and the reference.
  virtual void write_repro(const Case& c, const std::string& path, const std::string& note) = 0;
};

struct TargetOptions {
  std::string spec;    // --kernel: a revision name or .so path, or host:NAME
  GenBudget envelope;  // plan limits for GPU targets (the stream's envelope)
};

// host:bf16-reference, host:faulty[:RULE,...] (host_targets.cpp). nullptr when `spec` is not
// a host target; InputError (field --kernel) when it names one wrongly.
std::unique_ptr<Target> make_host_target(const TargetOptions& options);

// What the faulty host target does, and when (exposed for the CLI's help and for tests).
// RULE = ACTION@FIELD=VALUE: ACTION crash (SIGSEGV) | abort | hang | exit | wrong (elements moved
// where a bug keyed on FIELD would put them: host_targets.cpp) | oom (the ResourceError a full
// device gives the suite's cudaMalloc); ACTION-once does it only on a recipe's first run, in any
// worker process (marks in kFaultyStateVariable's directory); FIELD P (some P_b), T (some T_b),
// H, B. Default: crash@T=17,hang@P=77,wrong@H=3.
constexpr const char* kFaultyDefaultRules = "crash@T=17,hang@P=77,wrong@H=3";
constexpr const char* kFaultyStateVariable = "VATTN_FAULTY_STATE";

// A GPU target factory, installed by the binary that links the GPU code (nullptr: none).
using GpuTargetFactory = std::function<std::unique_ptr<Target>(const TargetOptions&)>;

}  // namespace vattn::fuzz
