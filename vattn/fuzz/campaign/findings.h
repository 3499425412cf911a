// SPDX-License-Identifier: Apache-2.0
// Findings of a campaign: one directory per distinct signature (DIR/findings/NNN-<class>/) with
// finding.json (class, check, bucket, evidence, count, first case, shrunk recipe, how to
// reproduce) and the repro files. A bug hit ten thousand times is one directory with a count.
// A check gets at most kMaxFindingsPerCheck directories, one per bucket (where its errors sit):
// a further bucket of that check is counted, not filed (the supervisor's extra buckets).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vattn/case/case.h"
#include "vattn/fuzz/protocol/protocol.h"

namespace vattn::fuzz {

constexpr int kMaxFindingsPerCheck = 3;

struct Finding {
  std::string id;   // "001"
  std::string dir;  // where it is, DIR/findings/001-crash (the journal and finding.json: findings/001-crash)
  std::string signature;
  Verdict first;                        // the first case that showed it
  std::string recipe;                   // that case's recipe line
  int64_t count = 0;                    // failed cases with this signature (this campaign, resumes included)
  std::string state = "investigating";  // investigating | done | interrupted
  json investigation;                   // confirmed, shrunk recipe, steps, runs, stop reason
  std::string repro, shrunk_repro;      // file names inside dir, "" when none
  json to_json(const std::string& kernel) const;
};

class FindingStore {
 public:
  FindingStore(std::string campaign_dir, std::string kernel);
  Finding* find(const std::string& signature);
  // Findings whose signature has the check (class and check) `check`, whatever their bucket.
  int count_check(const std::string& check) const;
  // A new finding for a failed case, in a folder of a number no finding has had: above every id
  // of this campaign and every NNN- folder under findings/ (a folder that exists is never reused,
  // whatever the journal says). Moves the worker's repro (if any) into it and writes finding.json.
  // The finding is kept whatever happens to its evidence; what could not be written is returned
  // ("" when all was).
  Finding& add(const Verdict& v, const std::string& recipe, std::string& evidence_error);
  // Restores a finding from its journal line (its "dir" made findings/NAME by read_journal) and
  // its finding.json on --resume and for a summary rebuilt from the journal; writes nothing.
  // InputError when its folder is a symbolic link.
  Finding& restore(const json& finding_line, const json* done_line, int64_t hits);
  // finding.json, written atomically (replace_file); "" or why it could not be written.
  [[nodiscard]] std::string save(const Finding& f) const;
  std::vector<Finding*> all();
  const std::string& kernel() const { return kernel_; }

  // The commands that re-run a recipe or a repro file against the kernel.
  static std::string rerun_command(const std::string& kernel, const std::string& recipe);

 private:
  std::string dir_, kernel_;
  std::vector<std::unique_ptr<Finding>> findings_;
  std::map<std::string, Finding*> by_signature_;
};

using vattn::shell_quote;  // case.h

}  // namespace vattn::fuzz
