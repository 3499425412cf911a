// SPDX-License-Identifier: Apache-2.0
// `vattn fuzz --recipe LINE`: one case in a fresh worker, with the campaign's deadline floor, crash
// and hang handling and resource retries, but no campaign directory; prints the verdict (supervisor.h).
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>
#include <vector>

#include <optional>
#include <thread>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernels/vattn_abi.h"
#include "vattn/case/case.h"
#include "vattn/fuzz/campaign/supervisor.h"
#include "vattn/fuzz/campaign/supervisor_util.h"
#include "vattn/fuzz/campaign/worker_process.h"
#include "vattn/fuzz/gen/gen_recipe.h"
#include "vattn/fuzz/protocol/protocol.h"

namespace vattn::fuzz {

namespace fs = std::filesystem;
using supervisor_detail::Clock;
using supervisor_detail::cuda_error_check;
using supervisor_detail::is_host_target;
using supervisor_detail::kResourceBackoffS;
using supervisor_detail::kResourceRetries;
using supervisor_detail::since;
using supervisor_detail::visible_gpus;

namespace {

// The case in one fresh worker: its verdict, or the exit code when it could not run at all.
struct Attempt {
  std::optional<Verdict> verdict;
  int exit_code = 0;
};

Attempt run_once(const CampaignOptions& options, const Recipe& recipe, const std::string& recipe_line,
                 const std::string& repro_path, const std::string& tmp, const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& env) {
  WorkerProcess proc;
  proc.spawn(argv, env, tmp + "/worker.log");
  LineReader reader;
  const auto t0 = Clock::now();
  auto last = t0;
  bool ready = false, started = false;
  std::string crash, fatal;
  bool fatal_usage = false;
  Clock::time_point started_at;
  Verdict v;
  bool have = false;
  const double deadline = options.case_timeout + 20.0 * (is_host_target(options.kernel) ? 2e-6 : 5e-8) *
                                                     static_cast<double>(recipe_work(recipe));
  while (!have) {
    pollfd p{proc.report_fd(), POLLIN, 0};
    if (proc.report_fd() >= 0) ::poll(&p, 1, 50);
    if (proc.report_fd() >= 0) reader.fill(proc.report_fd());
    json m;
    while (reader.next(m)) {
      last = Clock::now();
      const std::string ev = m.value("ev", "");
      if (ev == "ready") {
        if (recipe.sms != 0 && !m.value("plan_hook", false)) {
          // It would run with this GPU's plan, not the one the line names.
          proc.stop(2.0);
          std::error_code ec;
          fs::remove_all(tmp, ec);
          std::fprintf(stderr,
                       "vattn fuzz: --recipe asks for the plan of another GPU (sms=%d), and %s (%s) has no test plan "
                       "hook (" VATTN_TEST_PLAN_FOR_SYMBOL
                       ", kernels/vattn_abi.h) to run it; leave sms= and "
                       "sm_blocks= out of the line to run it with this GPU's plan\n",
                       recipe.sms, options.kernel.c_str(), printable(m.value("target", std::string("?"))).c_str());
          return {std::nullopt, 2};
        }
        ready = true;
        send_message(
            proc.command_fd(),
            {{"op", "case"}, {"index", 0}, {"recipe", recipe_line}, {"repro", repro_path.empty() ? "" : repro_path}});
      } else if (ev == "fatal") {
        fatal = m.value("reason", "");
        fatal_usage = m.value("usage", false);
      } else if (ev == "start") {
        started = true;
        started_at = Clock::now();
      } else if (ev == "crash") {
        crash = m.value("what", "");
      } else if (ev == "result") {
        v = Verdict::from_json(m.at("result"));
        have = true;
      }
    }
    if (have) break;
    int status = 0;
    if (proc.exited(&status)) {
      if (!fatal.empty()) {
        std::fprintf(stderr, "vattn fuzz: %s\n", printable(fatal).c_str());
        (void)fatal_usage;
        return {std::nullopt, 2};
      }
      if (!started) {
        std::fprintf(stderr, "vattn fuzz: the worker ended before the case started (%s); log: %s/worker.log\n",
                     describe_wait_status(status).c_str(), tmp.c_str());
        return {std::nullopt, 2};
      }
      v.verdict = crash.empty() && !WIFSIGNALED(status) ? "died" : "crash";
      v.check = crash.empty() ? describe_wait_status(status) : cuda_error_check(crash);
      v.detail = crash.empty() ? describe_wait_status(status) + " while running the code under test" : crash;
      break;
    }
    if (!ready && since(t0) > options.startup_timeout) {
      std::fprintf(stderr, "vattn fuzz: the worker was not ready within %.0f s\n", options.startup_timeout);
      return {std::nullopt, 2};
    }
    if (started && since(started_at) > deadline) {
      proc.kill_group();
      char buf[96];
      std::snprintf(buf, sizeof buf, "no verdict within %.0f s", deadline);
      v.verdict = "hang";
      v.check = "deadline passed";
      v.detail = buf;
      have = true;
    } else if (since(last) > options.heartbeat_timeout) {
      proc.kill_group();
      v.verdict = "hang";
      v.check = "heartbeat lost";
      v.detail = "no heartbeat for " + std::to_string(static_cast<int>(options.heartbeat_timeout)) + " s";
      have = true;
    }
  }
  proc.stop(2.0);
  return {v, 0};
}

}  // namespace

int run_single_recipe(const CampaignOptions& options, const std::string& recipe_line, const std::string& repro_path) {
  const Recipe recipe = Recipe::parse(recipe_line);  // InputError (field = the key) on a bad line
  const std::string tmp = fs::temp_directory_path().string() + "/vattn-fuzz-" + std::to_string(::getpid());
  fs::create_directories(tmp);
  std::vector<std::string> argv{options.self_exe, "fuzz-worker",       "--kernel",  options.kernel, "--budget",
                                options.budget,   "--envelope-recipe", recipe_line, "--threads",    "1"};
  std::map<std::string, std::string> env;
  if (!is_host_target(options.kernel)) {
    const auto gpus = visible_gpus();
    if (gpus.empty()) {
      std::fprintf(stderr, "vattn fuzz: no CUDA device is visible; %s needs one\n", options.kernel.c_str());
      return 2;
    }
    env["CUDA_VISIBLE_DEVICES"] = gpus.front();
  }
  std::signal(SIGPIPE, SIG_IGN);
  // A resource error (the device full of another process's memory, ...) is the suite's, not the
  // target's: the case runs again in a fresh worker after a pause, as in a campaign.
  Verdict v;
  for (int attempt = 0;; ++attempt) {
    const Attempt a = run_once(options, recipe, recipe_line, repro_path, tmp, argv, env);
    if (!a.verdict) return a.exit_code;
    v = *a.verdict;
    if (v.verdict != "resource" || attempt >= kResourceRetries) break;
    const double backoff = kResourceBackoffS * (1 << attempt);
    std::fprintf(stderr, "vattn fuzz: out of %s (%s); again in a fresh worker in %.1f s\n", printable(v.check).c_str(),
                 printable(v.detail).c_str(), backoff);
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
  }
  std::error_code ec;
  fs::remove_all(tmp, ec);  // the worker's log: kept above only where a message points to it
  if (v.verdict == "resource") {
    std::printf("NOT RUN %s  out of %s %d times: %s\n", recipe_line.c_str(), printable(v.check).c_str(),
                kResourceRetries + 1, printable(v.detail).c_str());
    return 2;
  }
  if (v.verdict == "input-error") {
    std::fprintf(stderr, "vattn fuzz: --recipe: %s\n", printable(v.detail).c_str());
    return 2;
  }
  if (!v.failed()) {
    std::printf("PASS %s  (%s, %.3f s)\n", recipe_line.c_str(), v.oracle.c_str(), v.total_s);
    return 0;
  }
  std::printf("FAIL %s  %s\n  %s\n", printable(v.signature()).c_str(), recipe_line.c_str(),
              printable(v.detail).c_str());
  if (!v.repro.empty()) std::printf("  repro: %s\n", v.repro.c_str());
  if (!v.evidence_error.empty()) {  // the failure stands (above); the evidence asked for is missing
    std::fprintf(stderr, "vattn fuzz: --recipe: %s\n", printable(v.evidence_error).c_str());
    return 2;
  }
  return 1;
}

}  // namespace vattn::fuzz
