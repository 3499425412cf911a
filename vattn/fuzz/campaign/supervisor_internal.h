// SPDX-License-Identifier: Apache-2.0
// The supervisor's state, private to its files: a case in flight, a slot (one GPU or host slot
// and the worker process that serves it; each has a second slot, its investigator, on the same
// GPU), and the Supervisor, whose members are defined by concern:
//   supervisor.cpp           the loop, when it stops, the closing lines and exit code
//   supervisor_open.cpp      a new campaign directory, or one resumed from its journal
//   supervisor_slots.cpp     slots and workers: spawning, dispatching, messages, health, a worker gone
//   supervisor_outcomes.cpp  verdicts: the journal, findings, the ledger, investigations
//   supervisor_summary.cpp   the progress line, ticks, summary.json and the closing summary
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "vattn/fuzz/campaign/campaign_lock.h"
#include "vattn/fuzz/campaign/coverage.h"
#include "vattn/fuzz/campaign/findings.h"
#include "vattn/fuzz/campaign/investigation.h"
#include "vattn/fuzz/campaign/journal.h"
#include "vattn/fuzz/campaign/ledger.h"
#include "vattn/fuzz/campaign/supervisor.h"
#include "vattn/fuzz/campaign/supervisor_util.h"
#include "vattn/fuzz/campaign/worker_process.h"
#include "vattn/fuzz/gen/case_stream.h"
#include "vattn/fuzz/protocol/protocol.h"

namespace vattn::fuzz::supervisor_detail {

struct InFlight {
  int64_t index = 0;
  std::string recipe;
  int64_t work = 0;
  std::string family;  // size_class(): the journal's "c"
  bool long_context = false;
  bool started = false, ran = false;
  Clock::time_point started_at;
};

// Stream seconds and the cases they ran, for the rate while a finding is investigated against
// the rate without one (summary.json's stream_spans): seconds while the stream had cases and its
// worker was up, less the time a case that ended the worker held it (a hang's deadline).
struct Span {
  double seconds = 0;
  int64_t cases = 0;
  json to_json() const;
};

// A slot is one worker process and what it holds. Each GPU (or host slot) has two: the stream
// slot runs the campaign's cases; its investigator, started only while a finding is confirmed
// and shrunk, runs that investigation's cases, one at a time, niced, with one pool thread, and
// only for its share of the time while the stream has cases (--investigation-share). At most two
// worker processes per GPU, then; a hang being shrunk costs its deadline in the investigator only.
struct Slot {
  int id = 0;
  std::string gpu;    // CUDA_VISIBLE_DEVICES for its workers; "" on the host
  std::string label;  // "gpu0", "host0"; an investigator: "gpu0-inv"
  bool investigator = false;
  WorkerProcess proc;
  LineReader reader;
  bool ready = false;
  Clock::time_point spawned_at, last_message;
  std::map<int64_t, InFlight> inflight;
  std::optional<int64_t> running;             // the case inside the code under test
  std::map<int64_t, std::string> crash_what;  // a worker's own crash report, by case
  int startup_failures = 0;
  std::string fatal;
  bool fatal_usage = false;
  Clock::time_point not_before{};  // no worker is started before this (a resource error's backoff)
  // The stream slot's: cases a resource error sent back, for its next (fresh) worker, first.
  std::deque<int64_t> retries;
  Span clean, investigating;  // this slot's stream time, by whether its investigator has an investigation
  // The investigator's: the investigation it runs (its cases have negative indices).
  std::unique_ptr<Investigation> inv;
  Finding* inv_finding = nullptr;
  Clock::time_point inv_started;
  int64_t inv_next_index = -1;
  bool respawn_before_next = false;
  std::deque<std::pair<std::string, std::string>> repro_ops;  // (recipe, path) to write
  bool repro_waiting = false;
  int inv_resource_tries = 0;  // resource errors of the current run (retried before it is fed)
  // Seconds the investigator was busy (a run in flight, or a worker starting) in this investigation:
  // its share and --max-shrink-seconds count these.
  double busy_s = 0;
  double busy_before_s = 0;  // busy seconds of this investigation in earlier runs (--resume)
  int64_t runs = 0;          // investigation runs, over the campaign
  std::deque<std::pair<Clock::time_point, int64_t>> rate_samples;  // (when, cases): the progress line's rate
  // statistics
  int64_t cases = 0, long_cases = 0, respawns = 0;
  double run_s = 0, up_s = 0, pool_s = 0;                      // from the current worker's heartbeat
  double run_s_done = 0, up_s_done = 0, pool_s_done = 0;       // from workers already gone
  json phases = json::object(), phases_done = json::object();  // the target's seconds per phase
};

class Supervisor {
 public:
  explicit Supervisor(const CampaignOptions& o) : opt_(o) {}
  int run();

 private:
  // setup
  void open_campaign();
  void resume_campaign();                      // supervisor_resume.cpp
  void resume_kernel(const JournalState& st);  // the library it will load, checked against its record
  void resume_findings(const JournalState& st);
  // --out: refuses a folder that is neither new, nor empty (its lock file aside), and takes it.
  void claim_new_folder();
  // Makes a directory of the campaign; remembered when this run created it.
  void make_dir(const std::string& path);
  // A fresh campaign that cannot start: removes what this run created (newest first), nothing else.
  void remove_created();
  void make_slots();
  std::vector<std::string> worker_argv(const Slot& s) const;
  int worker_threads() const;
  void spawn(Slot& s);
  std::vector<Slot*> all_slots();  // the stream slots, then the investigators
  Slot& investigator_of(const Slot& s) { return *investigators_[static_cast<size_t>(s.id)]; }
  // loop
  void dispatch(Slot& s);
  void dispatch_investigation(Slot& s);
  void pump(Slot& s);
  void handle(Slot& s, const json& m);
  void check_health(Slot& s);
  void worker_gone(Slot& s, const std::string& how, const std::string& verdict);
  void recycle(Slot& s, double backoff_s);  // replace the worker after backoff_s; its cases go back
  void outcome(Slot& s, const InFlight& f, Verdict v);
  void fuzz_outcome(Slot& s, const InFlight& f, Verdict& v);
  void resource_outcome(Slot& s, const InFlight& f, const Verdict& v);
  void investigation_outcome(Slot& s, const InFlight& f, const Verdict& v);
  void record_shrink(const Slot& s);  // the investigation's progress, for a resume
  // Appends a journal line. A journal that cannot be written stops the campaign (suite_failure):
  // the campaign's record is lost from there on, so nothing more is run.
  void record(const json& line);
  // The suite cannot keep its record or its evidence (a full disk, a file-size limit): the campaign
  // says why at once (stderr, the journal, the summary) and stops, exit 2, whatever it found.
  void suite_failure(const std::string& why);
  // A suite error (a recipe that does not generate, a worker gone outside the code under test):
  // counted and listed with its reason; `index` >= 0 for a case (its case line says why), else a
  // suite-error line is journaled.
  void note_suite_error(const std::string& what, const std::string& detail, int64_t index);
  // Tells every ready worker that `signature` (a ledger pattern when `pattern`) has its evidence.
  void tell_known(const std::string& signature, bool pattern);
  // `progress`: a shrink line of an earlier run to go on from (null: from the first case).
  void start_investigation(Slot& s, Finding& f, const Verdict& v, const std::string& recipe,
                           const json& progress = json());
  void start_waiting_investigations();
  void finish_investigation(Slot& s);
  void account(Clock::time_point now);            // busy seconds of investigators, stream spans
  bool investigator_yields(const Slot& s) const;  // over its share while the stream has cases
  double deadline_for(int64_t work) const;
  std::optional<int64_t> next_index();
  int64_t planned_cases() const;  // indices of this shard below --cases (-1: no --cases)
  bool stream_has_cases() const;  // cases left to dispatch or in flight, and not stopping
  bool finished() const;
  bool investigations_done() const;     // no finding being confirmed, shrunk or waiting for it
  bool raised(const Finding& f) const;  // counted as a finding: not a crash or hang a fresh worker did not repeat
  // output
  void progress_line(bool force);
  void say(const std::string& line);  // a line above the progress line (terminal only)
  void tick();
  std::string write_summary(const std::string& reason);  // "" or why summary.json could not be written
  std::string summary_text(const std::string& reason) const;

  CampaignOptions opt_;
  std::string dir_;
  CampaignLock lock_;                      // DIR/.lock, held for the supervisor's life
  std::vector<std::string> created_dirs_;  // --out made DIR (and these folders above it), innermost first
  std::vector<std::string> created_;       // what this run created in DIR, oldest first
  std::unique_ptr<CaseStream> stream_;
  Journal journal_;
  std::unique_ptr<FindingStore> findings_;
  Ledger ledger_;
  json mix_;  // the campaign line's "mix" (null: the stream has no mix table)
  int64_t tolerated_total_ = 0;
  // Failed cases of buckets past kMaxFindingsPerCheck findings of their check, by signature.
  std::map<std::string, int64_t> extra_;
  Coverage coverage_;
  std::vector<std::unique_ptr<Slot>> slots_;          // stream slots, one per GPU or host slot
  std::vector<std::unique_ptr<Slot>> investigators_;  // investigators_[i] shares slots_[i]'s GPU
  std::set<int64_t> done_, requeue_;
  int64_t next_fresh_ = 0;
  int64_t run_number_ = 1;
  Clock::time_point t0_ = Clock::now(), last_progress_, last_tick_;
  // totals (campaign-wide: resumed runs included)
  std::map<std::string, int64_t> by_verdict_, by_class_;
  int64_t cases_total_ = 0, cases_this_run_ = 0, long_this_run_ = 0, failed_total_ = 0, suite_errors_ = 0;
  int64_t raised_this_run_ = 0;            // new findings of this run investigated and confirmed
  std::set<const Finding*> new_this_run_;  // finding directories this run created
  double earlier_seconds_ = 0;
  double per_work_ = 0;  // learned: the slowest seconds per unit of work seen in the code under test
  int64_t learned_from_ = 0;
  struct Waiting {
    Finding* finding;
    Verdict first;
    std::string recipe;
    json progress;  // its last shrink line, when it resumes one
  };
  std::deque<Waiting> waiting_;  // new findings whose slot was busy shrinking another
  // Resource errors (verdict "resource", worker starts that found no descriptors or memory):
  // retried on a fresh worker up to kResourceRetries times, then the case is journaled as not run.
  std::map<int64_t, int> resource_tries_;  // case index -> resource errors so far (this run)
  int64_t resource_errors_ = 0, resource_retried_ = 0, not_run_ = 0;
  json not_run_cases_ = json::array();  // {index, recipe, resource, detail} of this run, the first 100
  Clock::time_point last_account_ = Clock::now();
  int64_t last_tick_cases_ = 0;
  bool stopping_ = false;
  std::string stop_reason_;
  bool fatal_usage_ = false;
  std::string fatal_reason_;
  std::string kernel_sha256_;              // the revision library's digest, as loaded ("" for other kernels)
  bool kernel_accepted_ = false;           // --allow-changed-kernel took a library the journal did not record
  bool suite_failed_ = false;              // suite_failure(): exit 2
  bool journal_broken_ = false;            // the journal could not be appended to: no more lines are tried
  json journal_problems_ = json::array();  // lines of the journal --resume skipped ("line N: why")
  json suite_error_list_ = json::array();  // the campaign's suite errors, the first 100: {index, what, detail}
  double time_target_s_ = 0, time_oracle_s_ = 0;
  std::map<std::string, std::pair<int64_t, double>>
      class_rate_;  // class -> (cases, seconds in code under test + oracle)
};

}  // namespace vattn::fuzz::supervisor_detail
