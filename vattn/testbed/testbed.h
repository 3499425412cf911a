// SPDX-License-Identifier: Apache-2.0
// The testbed: the whole verdict of one kernel revision on one case, CUTLASS style.
//   initialize  beyond_capabilities(): whether the revision implements the case; the caller
//               uploads it (DeviceCase, plainly or staged) and holds a KernelRunner (a plan)
//   run         Testbed::run(), device side, on the caller's thread: the chosen oracle if it is
//               the naive GPU one, the argument contract, the fault the caller plants, the
//               poisoned run (outputs and workspace poisoned, error word and guard bands read
//               back: vattn/gpu/kernel_runner.h), the properties' extra runs
//   verify      verify(), host only, any thread: the CPU oracles when chosen, then the checks in
//               one fixed order; the first that fails is the Verdict
//   evidence    write_evidence(): the repro file (repro.h) of a failed verdict
// Every entry point (the GPU tests, `vattn replay --kernel`, the fuzz worker's GPU target) runs
// this code and chooses only Options; a new check is a Property (property.h) judged here.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "vattn/case/case.h"
#include "vattn/check/draft_poison.h"
#include "vattn/gpu/device_case.h"
#include "vattn/gpu/kernel_runner.h"
#include "vattn/gpu/revision.h"
#include "vattn/testbed/plan.h"
#include "vattn/testbed/property.h"
#include "vattn/testbed/verdict.h"

namespace vattn::testbed {

// sum_b T_b*H*(P_b+T_b): the work kCpuOracleMaxWork is measured in.
int64_t case_work(const Case& c);

// "" when the revision's capabilities cover the case, else what is beyond them ("H = 200 > 128").
std::string beyond_capabilities(const Revision& rev, const Case& c);

// Thrown by run_and_verify() for a case beyond the revision's capabilities: not run, neither pass nor fail.
class Unsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class OracleChoice {
  kBySize,    // the CPU float64 oracle and bf16 yardstick up to kCpuOracleMaxWork, else the naive GPU oracle
  kCpu,       // the CPU oracles at any size
  kNaiveGpu,  // the naive GPU oracle at any size (no ratio check: it is float32)
  kGiven,     // the caller passes References to verify() (computed once for several runs)
};

// A fault the caller planted in the uploaded case (Property::kInjectedFault) and what must follow.
struct FaultPlan {
  std::string kind;          // the fault's name ("index-neg", "drafts-over", ...); "" = none planted
  uint32_t expect = 0;       // error bits of which at least one must be set
  int request = -1;          // whose rows must come out NaN (-1: none checked)
  bool others_right = true;  // the other requests' rows must still match the oracle
};

// Outputs are filled with this byte before a faulted run (0x3f3f as bf16 and 0x3f3f3f3f as fp32
// are about 0.75): the rows the fault affects must then be written as NaN by the kernel, where the
// usual NaN poison would let a kernel that writes nothing pass.
constexpr unsigned char kFaultedOutputFill = 0x3f;

struct Options {
  int splits = 0;  // forced split count (0: the revision chooses)
  // The GPU the revision plans for (plan.h): set around every kernel run of the case, the
  // properties' extra runs included, and reset after. Set, on a revision without the test plan
  // hook: run() throws InputError (field "sms") and runs nothing.
  PlanOverride plan;
  OracleChoice oracle = OracleChoice::kBySize;
  Properties properties;  // checked besides the run and the oracle comparison
  uint64_t seed = 0;      // picks the poisoned draft (kPartlyVisiblePoison)
  // kInjectedFault: breaks the uploaded case after the oracle ran, before the kernel does.
  std::function<FaultPlan(DeviceCase& dc, const KernelRunner& runner)> inject;
};

// What run() observed. Plain data: verify() may judge it on another thread.
struct Observation {
  Options options;                         // inject cleared
  RunResult run;                           // the case as given (or with the planted fault)
  std::string oracle;                      // kOracleFp64 or kNaiveGpuOracle; "" with OracleChoice::kGiven
  std::shared_ptr<const Reference> naive;  // the naive GPU oracle when it was chosen
  std::string contract;                    // kArgumentContract: "" or the first broken call not refused
  FaultPlan fault;                         // kInjectedFault: what inject() planted
  DraftPoison poison;                      // kPartlyVisiblePoison: the poisoned draft (applies() false: none)
  RunResult poisoned;                      //   and the run with it poisoned (only after a clean run)
  struct ZeroQuery {                       // kFp32Partials, when the run used two or more splits
    std::vector<float> multi, single, mean, mean_abs;  // zero-query outputs, the oracle's mean and abs_pv
    int splits = 0;
    bool ran() const { return !multi.empty(); }
  } zero;
  const vattn_revision* api = nullptr;  // for messages
  // Seconds run() spent in the naive GPU oracle, in the kernel (contract, runs, the poisoned
  // run) and in the fp32-partials runs (their oracle included): a fuzz worker's "where the time goes".
  double oracle_s = 0, kernel_s = 0, partials_s = 0;
};

// The judgement of an Observation.
struct Outcome {
  Verdict verdict;
  CompareReport report;  // the run held to the oracle (compared: whenever the references were at hand)
  bool compared = false;
  // The CPU oracles verify() computed (empty when it computed none): evidence reuses them.
  std::shared_ptr<const Reference> ref64, bf16;
};

class Testbed {
 public:
  explicit Testbed(KernelRunner& runner) : runner_(&runner) {}  // a plan the caller keeps (and reuses)
  Testbed(Revision rev, const vattn_limits& limits);            // a plan of its own
  KernelRunner& runner() { return *runner_; }

  // The run step (see above). With kFp32Partials the case's queries are zero on the device
  // afterwards; with a fault planted, the indices are as inject() left them.
  Observation run(DeviceCase& dc, const Case& c, const Options& options);

 private:
  std::unique_ptr<KernelRunner> own_;
  KernelRunner* runner_;
};

// The verify step (see above). `refs`: with OracleChoice::kGiven (else ignored). `label` names
// the result in the report ("kernel:split-v1 splits=3"; " vs <oracle>" is appended).
Outcome verify(const Case& c, const Observation& obs, const std::string& label, const References* refs = nullptr);

// The single checks verify() chains, each "" when it holds, for callers that state one property
// alone (the GPU property tests). `refs.ref` gives the bound's scales.
std::string partly_visible_poison_problem(const Case& c, const Observation& obs, const References& refs);
std::string fp32_partials_problem(const Observation& obs);

// The evidence step: the repro of a failed verdict at `path` (repro.h), holding the oracle and the
// result. A partly-visible-poison failure judged by the CPU oracle writes the poisoned case, its
// float64 oracle and the kernel's output on it, so `vattn replay FILE` fails where the rows moved.
// Computes the CPU oracles if verify() did not; with OracleChoice::kGiven the file holds `refs`
// (none when null). Throws on write errors.
void write_evidence(const Case& c, const Observation& obs, Outcome& outcome, const std::string& path,
                    const std::string& target, const std::string& note, const References* refs = nullptr);

// One revision on one case, initialize, run and verify in one call, on the plan limits given
// (`limits` set: a recipe's limits=, with the case's head count) or else on limits fitted to the
// case with room for max(splits, plan_splits) splits. Throws Unsupported when the case (or the
// limits) are beyond the revision's capabilities, InputError as Testbed::run() does.
struct CaseResult {
  Observation obs;
  Outcome outcome;
};
CaseResult run_and_verify(const Revision& rev, const Case& c, const Options& options, const std::string& label,
                          int plan_splits, const References* refs = nullptr, const Recipe::PlanLimits& limits = {});

// What `vattn replay --kernel` runs for each case: the revision with the forced split count
// (0: its own choice) on the plan the case's recipe asks for (plan limits, another GPU's plan;
// case_plan_of_line()), held to the references replay computed; no property beyond the run.
CaseResult replay_kernel(const Revision& rev, const Case& c, int forced_splits, const References& refs,
                         const CasePlan& plan = {});

}  // namespace vattn::testbed
