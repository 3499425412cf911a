// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/worker/worker.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <new>
#include <set>
#include <system_error>
#include <thread>
#include <vector>

#include <unistd.h>

#include "vattn/case/resource_error.h"

namespace vattn::fuzz {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// What a failure of the suite's own work ran short of ("device memory", "host memory", "file
// descriptors", "disk space"), or "" when it is no resource failure. The code under test's own
// errors never get here as one: the GPU target turns a kernel's CUDA error into DeviceLost, and
// only the suite's allocation sites raise ResourceError (vattn/case/resource_error.h).
std::string resource_of(const std::exception& e) {
  if (const auto* r = dynamic_cast<const ResourceError*>(&e)) return r->resource();
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return "host memory";
  if (const auto* s = dynamic_cast<const std::system_error*>(&e)) {
    const std::error_code c = s->code();
    if (c.category() != std::generic_category() && c.category() != std::system_category()) return "";
    switch (c.value()) {
      case ENOMEM: return "host memory";
      case EMFILE:
      case ENFILE: return "file descriptors";
      case ENOSPC:
      case EDQUOT: return "disk space";
      default: return "";
    }
  }
  return "";
}

// The verdict of a case the suite could not run for want of a resource: not the target's failure;
// the supervisor retries it on a fresh worker (docs/reports.md).
Verdict resource_verdict(const std::string& resource, const std::string& what) {
  Verdict v;
  v.verdict = "resource";
  v.check = resource;
  v.detail = what;
  return v;
}

// Serialises messages on the report pipe (main thread, pool threads and the heartbeat share it).
class Reporter {
 public:
  void send(const json& m) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!send_message(kReportFd, m)) ::_exit(0);  // the supervisor is gone: nothing left to report to
  }

 private:
  std::mutex mu_;
};

// A small task pool: checks go to the front (they free memory and finish cases), generation to
// the back. Written by hand because the standard library has none and the order matters here.
class Pool {
 public:
  explicit Pool(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void push(std::function<void()> task, bool urgent) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (urgent)
        tasks_.push_front(std::move(task));
      else
        tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
  }
  std::atomic<double> busy_s{0};

 private:
  void loop() {
    while (true) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      const auto t0 = Clock::now();
      task();
      busy_s = busy_s + seconds_since(t0);
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

// Signatures the campaign has evidence of already (op "known"): their repros are not written again.
// A ledger entry comes as a pattern (a glob, or a check with any bucket: signature_matches()).
class KnownSignatures {
 public:
  void add(const std::string& s, bool pattern) {
    std::lock_guard<std::mutex> lock(mu_);
    if (pattern) {
      patterns_.push_back(s);
    } else {
      known_.insert(s);
    }
  }
  bool has(const std::string& s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (known_.count(s) != 0) return true;
    for (const std::string& p : patterns_)
      if (signature_matches(p, s)) return true;
    return false;
  }

 private:
  std::mutex mu_;
  std::set<std::string> known_;
  std::vector<std::string> patterns_;
};

struct Job {
  int64_t index = -1;
  std::string recipe_line, repro;
  bool repro_only = false, force_repro = false;
  Recipe recipe;
  std::shared_ptr<Case> c;
  std::shared_ptr<void> prepared;  // Target::prepare's result
  std::string generate_error;
  std::string generate_resource;  // what generation ran short of ("": it failed for another reason)
};

// Jobs whose inputs are generated, waiting for the main thread, in arrival order.
class ReadyQueue {
 public:
  void put(std::shared_ptr<Job> j) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_.push_back(std::move(j));
    }
    cv_.notify_one();
  }
  void close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }
  void expect_one_more() {
    std::lock_guard<std::mutex> lock(mu_);
    ++pending_;
  }
  // The next job, or nullptr once closed and everything expected has been handed out.
  std::shared_ptr<Job> take() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !ready_.empty() || (closed_ && pending_ == 0); });
    if (ready_.empty()) return nullptr;
    auto j = ready_.front();
    ready_.pop_front();
    --pending_;
    return j;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> ready_;
  int pending_ = 0;
  bool closed_ = false;
};

}  // namespace

void ReproRequest::write(Verdict& v, const std::function<void(const std::string& path)>& write_file) const {
  if (!wanted(v)) return;
  try {
    write_file(path);
    v.repro = path;
  } catch (const std::exception& e) {
    // The judgement stands; a half-written file is no evidence.
    v.evidence_error = std::string("the repro file ") + path + " could not be written: " + e.what();
    std::remove(path.c_str());
  }
}

int worker_main(const WorkerOptions& options, const GpuTargetFactory& gpu_factory) {
  Reporter report;
  std::unique_ptr<Target> target;
  try {
    target = make_host_target(options.target);
    if (!target) {
      if (!gpu_factory)
        throw InputError("", "", "--kernel", "this vattn was built without GPU support; only host:* targets run");
      target = gpu_factory(options.target);
    }
  } catch (const InputError& e) {
    report.send({{"ev", "fatal"}, {"reason", std::string(e.what())}, {"usage", true}});
    return 2;
  } catch (const std::exception& e) {
    report.send({{"ev", "fatal"}, {"reason", std::string(e.what())}});
    return 2;
  }
  const int threads =
      options.threads > 0 ? options.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - 1);
  report.send({{"ev", "ready"},
               {"target", target->name()},
               {"device", target->device()},
               {"threads", threads},
               {"device_variants", target->device_variants()},
               {"plan_hook", target->plan_hook()},
               {"pid", static_cast<int64_t>(::getpid())}});

  Pool pool(threads);
  ReadyQueue ready;
  KnownSignatures known;
  std::atomic<double> run_s{0};
  std::atomic<int> busy{0};
  std::atomic<bool> done{false};
  const auto t_start = Clock::now();

  std::thread heartbeat([&] {
    while (!done) {
      report.send({{"ev", "hb"},
                   {"busy", busy.load()},
                   {"run_s", run_s.load()},
                   {"pool_s", pool.busy_s.load()},
                   {"up_s", seconds_since(t_start)},
                   {"phases", target->phase_seconds()}});
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });

  // Commands: each case is generated on the pool and queued for the main thread.
  std::thread reader([&] {
    LineReader lines;
    json m;
    while (lines.fill(STDIN_FILENO)) {
      while (lines.next(m)) {
        const std::string op = m.value("op", "");
        if (op == "quit") {
          ready.close();
          return;
        }
        if (op == "known") {
          known.add(m.value("sig", ""), m.value("pattern", false));
          continue;
        }
        if (op != "case" && op != "repro") continue;
        auto job = std::make_shared<Job>();
        job->index = m.value("index", int64_t{-1});
        job->recipe_line = m.value("recipe", "");
        job->repro = m.value("repro", "");
        job->repro_only = op == "repro";
        job->force_repro = m.value("force_repro", false);
        ready.expect_one_more();
        ++busy;
        pool.push(
            [job, &ready, t = target.get()] {
              try {
                job->recipe = Recipe::parse(job->recipe_line);
                job->c = std::make_shared<Case>(generate_case(job->recipe, "fuzz-" + std::to_string(job->index)));
              } catch (const std::exception& e) {
                job->generate_error = e.what();
                job->generate_resource = resource_of(e);
              }
              if (job->c && !job->repro_only) job->prepared = t->prepare(*job->c, job->recipe);
              ready.put(job);
            },
            false);
      }
    }
    ready.close();
  });

  while (auto job = ready.take()) {
    if (!job->generate_error.empty()) {
      Verdict v;
      if (!job->generate_resource.empty()) {
        v = resource_verdict(job->generate_resource, job->generate_error);
      } else {
        v.verdict = "input-error";
        v.check = "recipe";
        v.detail = job->generate_error;
      }
      v.index = job->index;
      report.send({{"ev", job->repro_only ? "repro-done" : "result"}, {"result", v.to_json()}});
      --busy;
      continue;
    }
    if (job->repro_only) {
      json m{{"ev", "repro-done"}, {"path", job->repro}};
      try {
        target->write_repro(*job->c, job->repro, "inputs and oracle only: the target left no result");
      } catch (const std::exception& e) {
        m["error"] = std::string(e.what());
      }
      report.send(m);
      --busy;
      continue;
    }
    report.send({{"ev", "start"}, {"index", job->index}});
    const auto t0 = Clock::now();
    Check check;
    try {
      check = target->run(*job->c, job->recipe, std::move(job->prepared));
    } catch (const DeviceLost& e) {
      report.send({{"ev", "crash"}, {"index", job->index}, {"what", std::string(e.what())}});
      ::_exit(70);  // the device context is gone: nothing more can run in this process
    } catch (const InputError& e) {
      // The recipe asks for what this target cannot do as described (another GPU's plan without
      // the plan hook, plan limits beyond the revision or the device): nothing ran.
      const std::string what = e.what();
      check = [what](const ReproRequest&) {
        Verdict v;
        v.verdict = "input-error";
        v.check = "run parameters";
        v.detail = what;
        return v;
      };
    } catch (const std::exception& e) {
      const std::string what = e.what(), resource = resource_of(e);
      check = [what, resource](const ReproRequest&) {
        if (!resource.empty()) return resource_verdict(resource, what);
        Verdict v;
        v.verdict = "refused";
        v.check = "run";
        v.detail = what;
        return v;
      };
    }
    const double target_s = seconds_since(t0);
    run_s = run_s + target_s;
    report.send({{"ev", "ran"}, {"index", job->index}});
    pool.push(
        [job, check = std::move(check), target_s, t0, &report, &busy, &known] {
          const auto c0 = Clock::now();
          Verdict v;
          ReproRequest repro{job->repro, nullptr};
          if (!job->force_repro) repro.known = [&known](const std::string& sig) { return known.has(sig); };
          try {
            v = check(repro);
          } catch (const std::exception& e) {
            const std::string resource = resource_of(e);
            if (!resource.empty()) {
              v = resource_verdict(resource, e.what());
            } else {
              v.verdict = "input-error";
              v.check = "check";
              v.detail = e.what();
            }
          }
          v.index = job->index;
          v.target_s = target_s;
          v.oracle_s = seconds_since(c0);
          v.total_s = seconds_since(t0);
          job->c.reset();
          report.send({{"ev", "result"}, {"result", v.to_json()}});
          --busy;
        },
        true);
  }
  // Every check has been queued; the pool drains them before it is destroyed.
  while (busy > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  done = true;
  heartbeat.join();
  reader.join();
  return 0;
}

}  // namespace vattn::fuzz
