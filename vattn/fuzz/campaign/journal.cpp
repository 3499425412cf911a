// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/campaign/journal.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vattn/case/case.h"

namespace vattn::fuzz {

namespace {
double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

Journal::~Journal() {
  if (fd_ >= 0) {
    ::fsync(fd_);
    ::close(fd_);
  }
}

void Journal::create(const std::string& path) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) throw InputError(path, "", "journal", std::string("cannot create: ") + std::strerror(errno));
  last_sync_ = now_s();
}

void Journal::open_append(const std::string& path) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd_ < 0) throw InputError(path, "", "journal", std::string("cannot open: ") + std::strerror(errno));
  // Cut a torn last line (no newline: the supervisor died inside a write) so the next line
  // starts clean.
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && st.st_size > 0) {
    off_t end = st.st_size;
    char c = 0;
    while (end > 0 && ::pread(fd_, &c, 1, end - 1) == 1 && c != '\n') --end;
    if (end != st.st_size && ::ftruncate(fd_, end) != 0) {
      throw InputError(path, "", "journal", std::string("cannot cut its torn last line: ") + std::strerror(errno));
    }
  }
  last_sync_ = now_s();
}

void Journal::append(const json& line) {
  if (!send_message(fd_, line))
    throw std::runtime_error("journal " + path_ + ": write failed: " + std::strerror(errno));
  sync_if_due();
}

void Journal::sync_if_due() {
  if (now_s() - last_sync_ >= 1.0) sync();
}

void Journal::close() {
  if (fd_ >= 0) {
    ::fsync(fd_);
    ::close(fd_);
  }
  fd_ = -1;
}

void Journal::sync() {
  if (fd_ >= 0) ::fsync(fd_);
  last_sync_ = now_s();
}

JournalState read_journal(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "journal", "no such journal (is this a campaign directory?)");
  JournalState s;
  std::string line;
  bool first = true;
  std::map<int64_t, double> run_elapsed;  // a run's latest tick or end: a killed run has no end line
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      ++s.torn_lines;
      continue;
    }
    try {
      const std::string t = j.value("t", "");
      if (first) {
        if (t != "campaign" || j.value("schema", "") != kJournalSchema) {
          throw InputError(path, "", "journal", "its first line is not a vattn fuzz campaign line");
        }
        if (j.value("version", 0) != kJournalVersion) {
          throw InputError(path, "", "journal",
                           "journal version " + std::to_string(j.value("version", 0)) + "; this vattn reads version " +
                               std::to_string(kJournalVersion));
        }
        s.campaign = j;
        first = false;
        continue;
      }
      if (t == "case") {
        s.done.insert(j.at("i").get<int64_t>());
        ++s.by_verdict[j.value("v", "?")];
        ++s.by_class[j.value("c", "?")];
        if (j.contains("f")) ++s.hits[j.at("f").get<std::string>()];
        if (j.value("k", "") == "ledger") ++s.tolerated[j.value("sig", "?")];
        if (j.value("k", "") == "extra") ++s.extra[j.value("sig", "?")];
      } else if (t == "resource") {
        ++s.resource_errors;
        if (j.value("then", "") == "retry") ++s.resource_retried;
      } else if (t == "finding") {
        s.findings.push_back(j);
      } else if (t == "finding-done") {
        s.finding_done[j.value("id", "")] = j;
      } else if (t == "run") {
        ++s.runs;
      } else if (t == "tick" || t == "end") {
        double& e = run_elapsed[j.value("run", int64_t{0})];
        e = std::max(e, j.value("elapsed_s", 0.0));
      }
    } catch (const json::exception&) {
      ++s.torn_lines;
    }
  }
  if (first) throw InputError(path, "", "journal", "empty: not a campaign journal");
  for (const auto& [run, e] : run_elapsed) s.seconds += e;
  return s;
}

}  // namespace vattn::fuzz
