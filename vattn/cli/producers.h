// SPDX-License-Identifier: Apache-2.0
// Live producers: results replay computes now, on this machine, for each case (the
// bf16-emulating CPU reference; on a GPU machine a kernel revision or the naive GPU oracle),
// as opposed to outputs stored in the file. Each is held to replay's references by the testbed's
// comparison (vattn/testbed/verdict.h), like a stored output; the kernel runs through the testbed
// (vattn/testbed/testbed.h, replay_kernel()). To add one: implement LiveProducer and append it in
// make_live_producers().
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/vattn_revisions.h"
#include "vattn/case/case.h"
#include "vattn/check/tolerance.h"
#include "vattn/oracle/cpu_oracle.h"
#include "vattn/testbed/plan.h"
#include "vattn/testbed/verdict.h"

namespace vattn::cli {

// What replay has already computed for a case; producers may use it instead of redoing it.
struct ReplayContext {
  const Case& c;
  const Reference& ref64;
  const Reference& bf16ref;
  testbed::References refs;  // what every result is held to (ref64, and bf16ref as yardstick unless --oracle gpu)
  int forced_splits = 0;     // from the recipe's splits= (0: the kernel chooses)
  testbed::CasePlan plan;    // from the recipe's limits=, sms= and sm_blocks= (unset: the kernel's own plan)
};

// Thrown by a producer that cannot handle this case (e.g. a shape beyond a kernel revision's
// capabilities): replay reports it as not run for that case, neither pass nor fail.
class CaseNotSupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class LiveProducer {
 public:
  virtual ~LiveProducer() = default;
  virtual std::string name() const = 0;  // table label, e.g. "kernel:split-v2"
  // "" when it can run here, else why not (replay prints "<name>: not run (<reason>)" once).
  virtual std::string unavailable_reason() const = 0;
  // Runs on the case and holds the result to ctx.refs (the report labelled "<name> vs <oracle>");
  // throws on a failed run (counted as FAIL), InputError when the case asks for what this
  // producer cannot honour (a plan the revision cannot make: the case is unusable for it).
  virtual CompareReport check(const ReplayContext& ctx) = 0;
};

// What the command line asked for; GPU options (kernel revision, oracle choice) go here too.
struct ProducerOptions {
  bool bf16_reference = false;                  // compare the bf16-emulating reference itself (replay --recipe)
  std::string kernel = VATTN_REVISION_DEFAULT;  // kernel revision: built-in name or revision library path
  std::string oracle = "cpu";                   // reference: "cpu" (float64) or "gpu" (naive GPU oracle)
};

// Every live producer this build knows, in table order, available or not.
std::vector<std::unique_ptr<LiveProducer>> make_live_producers(const ProducerOptions& options);

}  // namespace vattn::cli
