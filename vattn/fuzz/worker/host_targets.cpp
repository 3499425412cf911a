// SPDX-License-Identifier: Apache-2.0
// Host targets: the suite's supervisor, journal, findings and shrinking are exercised without a
// GPU through these. host:bf16-reference is the bf16-emulating CPU reference held to the
// float64 oracle (it must never fail); host:faulty is the same reference with planted faults on
// chosen cases: a real SIGSEGV, an abort, a hang, a silent exit, wrong elements where a bug keyed
// on that field would put them (plant_wrong below), or the resource error a full GPU gives the
// suite's own allocations. Each, or only a recipe's first run.
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "vattn/case/resource_error.h"
#include "vattn/fuzz/worker/target.h"
#include "vattn/recipe/vocab.h"
#include "vattn/testbed/repro.h"
#include "vattn/testbed/verdict.h"

namespace vattn::fuzz {

namespace {

struct FaultRule {
  std::string action;  // crash | abort | hang | exit | wrong | oom
  bool once = false;   // ACTION-once: only on a recipe's first run (marked in kFaultyStateVariable's directory)
  char field = 'T';    // P | T | H | B
  int64_t value = 0;
  bool matches(const Recipe& r) const {
    switch (field) {
      case 'H': return r.heads == value;
      case 'B': return static_cast<int64_t>(r.prefix.size()) == value;
      case 'P':
        for (int p : r.prefix)
          if (p == value) return true;
        return false;
      default:
        for (int t : r.drafts)
          if (t == value) return true;
        return false;
    }
  }
};

// Whether this is the recipe's first run under `rule`: its mark, one file per rule and recipe in
// kFaultyStateVariable's directory, is created now (O_EXCL), so a fresh worker knows it too.
bool first_run(const std::string& rule, const Recipe& r) {
  const char* dir = std::getenv(kFaultyStateVariable);
  const std::string mark = std::string(dir ? dir : "") + "/once-" + std::to_string(std::hash<std::string>{}(rule)) +
                           "-" + std::to_string(std::hash<std::string>{}(r.to_line()));
  const int fd = ::open(mark.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd >= 0) {
    ::close(fd);
    return true;
  }
  if (errno == EEXIST) return false;
  throw std::runtime_error("host:faulty " + rule + ": cannot create " + mark + ": " + std::strerror(errno));
}

// A wrong answer where a real bug keyed on the rule's field would put it, so that two rules make
// two findings (their buckets, vattn/check/error_bucket.h, differ) and one rule hit on many
// shapes makes one:
//   H  a head-count bug (say, a remainder head group): the last head of every row;
//   P  a prefix-length bug (say, a tail tile): every head of every row of each request whose P_b
//      is the value;
//   T  a draft-count bug: every head of the last draft row of each request whose T_b is the value;
//   B  a batch-size bug (say, the last work item cut short): the first 64 columns, one column
//      block of d_v, of every head of every row of the last request.
// Each element moves by 0.75, far outside any bf16 bound at the generators' magnitudes.
void plant_wrong(const FaultRule& rule, const Case& c, std::vector<float>& out) {
  const int64_t H = c.num_heads, dv = c.d_v, columns = rule.field == 'B' ? std::min<int64_t>(dv, 64) : dv;
  auto move = [&](int b, int i, int64_t h) {
    const int64_t first = ((c.qo_indptr[static_cast<size_t>(b)] + i) * H + h) * dv;
    for (int64_t d = 0; d < columns; ++d) out[static_cast<size_t>(first + d)] += 0.75f;
  };
  for (int b = 0; b < c.num_requests(); ++b) {
    const bool hit = (rule.field == 'P' && c.prefix_len(b) == rule.value) ||
                     (rule.field == 'T' && c.drafts(b) == rule.value) ||
                     (rule.field == 'B' && b == c.num_requests() - 1);
    for (int i = 0; i < c.drafts(b); ++i) {
      if (rule.field == 'H') move(b, i, H - 1);
      if (!hit || (rule.field == 'T' && i != c.drafts(b) - 1)) continue;
      for (int64_t h = 0; h < H; ++h) move(b, i, h);
    }
  }
}

std::vector<FaultRule> parse_rules(const std::string& text) {
  std::vector<FaultRule> rules;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t at = item.find('@'), eq = item.find('=');
    FaultRule f;
    f.action = item.substr(0, at);
    if (f.action.size() > 5 && f.action.compare(f.action.size() - 5, 5, "-once") == 0) {
      f.action.resize(f.action.size() - 5);
      f.once = true;
    }
    const bool known = f.action == "crash" || f.action == "abort" || f.action == "hang" || f.action == "exit" ||
                       f.action == "wrong" || f.action == "oom";
    if (at == std::string::npos || eq != at + 2 || !known ||
        std::string("PTHB").find(item[at + 1]) == std::string::npos) {
      throw InputError("", "", "--kernel",
                       "host:faulty rule '" + item +
                           "' is not ACTION@FIELD=VALUE (ACTION crash|abort|hang|exit|wrong|oom, each also "
                           "as ACTION-once, FIELD P|T|H|B), e.g. " +
                           kFaultyDefaultRules);
    }
    f.field = item[at + 1];
    const std::string num = item.substr(eq + 1);
    char* end = nullptr;
    f.value = std::strtoll(num.c_str(), &end, 10);
    if (num.empty() || *end != '\0' || f.value < 0) {
      throw InputError("", "", "--kernel", "host:faulty rule '" + item + "': '" + num + "' is not a whole number >= 0");
    }
    if (f.once && std::getenv(kFaultyStateVariable) == nullptr)
      throw InputError("", "", "--kernel",
                       "host:faulty rule '" + item + "' needs " + kFaultyStateVariable +
                           "=DIR, where it marks the recipes it ran once");
    rules.push_back(f);
  }
  if (rules.empty()) throw InputError("", "", "--kernel", "host:faulty: no rules after ':'");
  return rules;
}

class HostReference : public Target {
 public:
  HostReference(std::string name, std::vector<FaultRule> rules) : name_(std::move(name)), rules_(std::move(rules)) {}
  std::string name() const override { return name_; }
  std::string device() const override { return "host"; }
  bool device_variants() const override { return false; }

  Check run(const Case& c, const Recipe& r, std::shared_ptr<void> /*prepared*/) override {
    std::vector<const FaultRule*> wrong;
    for (const auto& rule : rules_) {
      if (!rule.matches(r)) continue;
      if (rule.once && !first_run(rule.action + "@" + rule.field + "=" + std::to_string(rule.value), r)) continue;
      if (rule.action == "crash") {
        std::raise(SIGSEGV);  // what a wild store would do, without depending on undefined behaviour
      } else if (rule.action == "abort") {
        std::abort();
      } else if (rule.action == "hang") {
        while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
      } else if (rule.action == "exit") {
        ::_exit(0);
      } else if (rule.action == "oom") {
        throw ResourceError("device memory", "host:faulty oom@" + std::string(1, rule.field) + "=" +
                                                 std::to_string(rule.value) +
                                                 ": cudaMalloc of the case's buffers failed: cudaErrorMemoryAllocation "
                                                 "(planted)");
      } else {
        wrong.push_back(&rule);  // every wrong rule that matches: two bugs can meet in one case
      }
    }
    // The code under test: what a correct bf16 kernel computes.
    auto result = std::make_shared<Reference>(reference_bf16_emulated(c));
    auto out = std::make_shared<std::vector<float>>(result->out.begin(), result->out.end());
    auto lse = std::make_shared<std::vector<float>>(result->lse.begin(), result->lse.end());
    for (const FaultRule* rule : wrong) plant_wrong(*rule, c, *out);
    return [this, &c, result, out, lse](const ReproRequest& repro) {
      const Reference ref = oracle_fp64(c);
      Verdict v = testbed::compare_verdict(c, {&ref, result.get(), testbed::kOracleFp64}, *out, *lse, name_);
      repro.write(v, [&](const std::string& path) {
        testbed::write_repro_file(c, path, name_, &ref, testbed::kOracleFp64, out.get(), lse.get(), v.signature());
      });
      return v;
    };
  }

  void write_repro(const Case& c, const std::string& path, const std::string& note) override {
    const Reference ref = oracle_fp64(c);
    testbed::write_repro_file(c, path, name_, &ref, testbed::kOracleFp64, nullptr, nullptr, note);
  }

 private:
  std::string name_;
  std::vector<FaultRule> rules_;
};

}  // namespace

std::unique_ptr<Target> make_host_target(const TargetOptions& options) {
  const std::string& spec = options.spec;
  if (spec.rfind("host:", 0) != 0) return nullptr;
  if (spec == "host:bf16-reference") return std::make_unique<HostReference>(spec, std::vector<FaultRule>{});
  if (spec == "host:faulty") return std::make_unique<HostReference>(spec, parse_rules(kFaultyDefaultRules));
  if (spec.rfind("host:faulty:", 0) == 0) return std::make_unique<HostReference>(spec, parse_rules(spec.substr(12)));
  throw InputError("", "", "--kernel",
                   "unknown host target '" + spec + "' (host:bf16-reference, host:faulty[:RULE,...] with RULE like " +
                       kFaultyDefaultRules + ")");
}

}  // namespace vattn::fuzz
