// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/campaign/run_options.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <regex>

#include "vattn/case/case.h"

namespace vattn::fuzz {

namespace {

// One run option: its key in the journal, its command-line name, and how it is read back.
struct OptionSpec {
  const char* key;
  const char* option;
  std::function<json(const CampaignOptions&)> get;
  // Checks a recorded value and sets it; false when the command line would refuse it.
  std::function<bool(const json&, CampaignOptions&)> set;
  const char* rule;  // what a good value is, for the error
};

std::function<bool(const json&, CampaignOptions&)> whole(int64_t lo, int64_t hi,
                                                         const std::function<void(CampaignOptions&, int64_t)>& put) {
  return [lo, hi, put](const json& v, CampaignOptions& o) {
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi) return false;
    put(o, v.get<int64_t>());
    return true;
  };
}

std::function<bool(const json&, CampaignOptions&)> seconds(bool zero_ok,
                                                           const std::function<void(CampaignOptions&, double)>& put) {
  return [zero_ok, put](const json& v, CampaignOptions& o) {
    if (!v.is_number()) return false;
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < 0 || (!zero_ok && d == 0) || d > run_limits::kMaxSeconds) return false;
    put(o, d);
    return true;
  };
}

const std::vector<OptionSpec>& specs() {
  using namespace run_limits;
  static const std::vector<OptionSpec> all{
      {"cases", "cases", [](const CampaignOptions& o) { return json(o.cases); },
       [](const json& v, CampaignOptions& o) {
         if (!v.is_number_integer() ||
             (v.get<int64_t>() != -1 && (v.get<int64_t>() < 1 || v.get<int64_t>() > kMaxCases)))
           return false;
         o.cases = v.get<int64_t>();
         return true;
       },
       "-1 (none) or a whole number in [1, 2^40]"},
      {"gpus", "gpus", [](const CampaignOptions& o) { return json(o.gpus); },
       [](const json& v, CampaignOptions& o) {
         static const std::regex list("all|[0-9]{1,4}(,[0-9]{1,4}){0,255}");
         if (!v.is_string() || !std::regex_match(v.get<std::string>(), list)) return false;
         o.gpus = v.get<std::string>();
         return true;
       },
       "all or a list like 0,1"},
      {"workers", "workers", [](const CampaignOptions& o) { return json(o.workers); },
       whole(1, kMaxWorkers, [](CampaignOptions& o, int64_t v) { o.workers = static_cast<int>(v); }),
       "a whole number in [1, 256]"},
      {"threads", "threads", [](const CampaignOptions& o) { return json(o.threads); },
       whole(0, kMaxThreads, [](CampaignOptions& o, int64_t v) { o.threads = static_cast<int>(v); }),
       "a whole number in [0, 1024] (0: chosen from the cores)"},
      {"window", "window", [](const CampaignOptions& o) { return json(o.window); },
       whole(0, kMaxWindow, [](CampaignOptions& o, int64_t v) { o.window = static_cast<int>(v); }),
       "a whole number in [0, 100000] (0: chosen from the threads)"},
      {"case_timeout", "case-timeout", [](const CampaignOptions& o) { return json(o.case_timeout); },
       seconds(false, [](CampaignOptions& o, double v) { o.case_timeout = v; }), "seconds > 0"},
      {"heartbeat_timeout", "heartbeat-timeout", [](const CampaignOptions& o) { return json(o.heartbeat_timeout); },
       seconds(false, [](CampaignOptions& o, double v) { o.heartbeat_timeout = v; }), "seconds > 0"},
      {"max_shrink_runs", "max-shrink-runs", [](const CampaignOptions& o) { return json(o.max_shrink_runs); },
       whole(0, kMaxShrinkRuns, [](CampaignOptions& o, int64_t v) { o.max_shrink_runs = static_cast<int>(v); }),
       "a whole number in [0, 1000000]"},
      {"max_shrink_seconds", "max-shrink-seconds", [](const CampaignOptions& o) { return json(o.max_shrink_seconds); },
       seconds(true, [](CampaignOptions& o, double v) { o.max_shrink_seconds = v; }), "seconds >= 0"},
      {"investigation_share", "investigation-share",
       [](const CampaignOptions& o) { return json(o.investigation_share); },
       [](const json& v, CampaignOptions& o) {
         if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1) return false;
         o.investigation_share = v.get<double>();
         return true;
       },
       "a share in (0, 1]"},
      {"stop_after_findings", "stop-after-findings",
       [](const CampaignOptions& o) { return json(o.stop_after_findings); },
       whole(0, kMaxStopAfterFindings,
             [](CampaignOptions& o, int64_t v) { o.stop_after_findings = static_cast<int>(v); }),
       "a whole number in [0, 1000000] (0: never)"},
  };
  return all;
}

// A value as the command line would give it: 3, not 3.0.
std::string shown(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() && std::fabs(v.get<double>()) < 1e15)
    return std::to_string(static_cast<int64_t>(v.get<double>()));
  return v.dump();
}

}  // namespace

json run_options_json(const CampaignOptions& o) {
  json j = json::object();
  for (const OptionSpec& s : specs()) j[s.key] = s.get(o);
  return j;
}

std::vector<std::string> reuse_run_options(const json& recorded, const std::string& where, CampaignOptions& o) {
  std::vector<std::string> said;
  if (!recorded.is_object()) return said;
  for (const OptionSpec& s : specs()) {
    if (!recorded.contains(s.key)) continue;
    const json& v = recorded.at(s.key);
    CampaignOptions scratch = o;  // checked whether or not it is taken
    if (!s.set(v, scratch))
      throw InputError(where, "", std::string("options.") + s.key, v.dump() + ": must be " + s.rule);
    if (o.given.count(s.option) == 0) {
      s.set(v, o);
    } else if (s.get(o) != v) {
      said.push_back("--" + std::string(s.option) + " " + shown(s.get(o)) + ": the campaign's last run used " +
                     shown(v) + "; this run and the ones after it use " + shown(s.get(o)));
    }
  }
  return said;
}

}  // namespace vattn::fuzz
