// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/campaign/journal.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vattn/case/case.h"
#include "vattn/case/file_read.h"
#include "vattn/fuzz/protocol/json_read.h"

namespace vattn::fuzz {

namespace fs = std::filesystem;

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

int64_t Journal::bytes() const {
  struct stat st {};
  if (fd_ < 0 || ::fstat(fd_, &st) != 0) return -1;
  return static_cast<int64_t>(st.st_size);
}

std::string confined_finding_dir(const std::string& dir) {
  // NNN-<class>: what FindingStore makes; nothing else is a finding's folder.
  static const std::regex name("[0-9]{1,9}-[a-z][a-z-]{0,31}");
  const fs::path p = fs::path(dir).lexically_normal();
  for (const auto& part : p)
    if (part == "..") return "";
  const std::string leaf = p.filename().string(), parent = p.parent_path().filename().string();
  if (parent != "findings" || !std::regex_match(leaf, name)) return "";
  // "findings/NAME" as it is now; a longer path is a journal from before relative paths, which
  // wrote the folder as typed ("night1/findings/001-hang", "/scratch/night1/findings/001-hang"):
  // only its last two parts are taken, inside this campaign.
  return "findings/" + leaf;
}

namespace {

constexpr int64_t kMaxCases = int64_t{1} << 40;   // --cases
constexpr int64_t kMaxShards = int64_t{1} << 20;  // --shard I/N
constexpr size_t kMaxProblems = 20;
// Far above any journal a campaign writes (a line is a few hundred bytes; a month of cases is a
// few GiB), and what a hostile file may make vattn read.
constexpr uint64_t kMaxJournalBytes = uint64_t{64} << 30;
constexpr size_t kMaxJournalLine = size_t{1} << 20;

// One line of `f` into `line`, its newline dropped; false at the end of the file. `torn`: it ended
// at the end of the file without a newline (a writer killed mid-line). A line longer than
// kMaxJournalLine is read to its end but not kept (`too_long`): memory stays bounded.
bool next_line(FILE* f, std::string& line, bool& torn, bool& too_long) {
  line.clear();
  torn = too_long = false;
  int c;
  bool any = false;
  while ((c = std::getc(f)) != EOF) {
    any = true;
    if (c == '\n') return true;
    if (line.size() < kMaxJournalLine) {
      line.push_back(static_cast<char>(c));
    } else {
      too_long = true;
    }
  }
  torn = any;
  return any;
}

// A field of the campaign line that cannot be: the campaign cannot be read (the stream it defines
// is unknown), so it is refused, naming the file, its line and the field.
[[noreturn]] void bad_field(const std::string& path, int64_t line, const std::string& field, const std::string& why) {
  throw InputError(path + ":" + std::to_string(line), "", field, why);
}

// The campaign line's fields, checked as the command line checks the options that set them.
void check_campaign_line(const json& c, const std::string& path) {
  auto need = [&](const char* key, bool ok, const std::string& what) {
    if (!ok) bad_field(path, 1, key, (c.contains(key) ? c.at(key).dump() : std::string("missing")) + ": " + what);
  };
  need("kernel",
       c.contains("kernel") && c.at("kernel").is_string() && !c.at("kernel").get<std::string>().empty() &&
           c.at("kernel").get<std::string>().size() <= 4096,
       "must name the kernel (a string)");
  need("seed",
       c.contains("seed") && c.at("seed").is_number_integer() && !c.at("seed").is_number_float() &&
           (c.at("seed").is_number_unsigned() || c.at("seed").get<int64_t>() >= 0) &&
           c.at("seed").get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX),
       "must be a whole number in [0, 2^63) (--seed)");
  const std::string budget =
      c.contains("budget") && c.at("budget").is_string() ? c.at("budget").get<std::string>() : "";
  need("budget", budget == "small" || budget == "medium" || budget == "large", "must be small, medium or large");
  if (c.contains("cases")) {
    const json& n = c.at("cases");
    need("cases",
         n.is_number_integer() && (n.get<int64_t>() == -1 || (n.get<int64_t>() >= 1 && n.get<int64_t>() <= kMaxCases)),
         "must be -1 (none) or a whole number in [1, 2^40] (--cases)");
  }
  if (c.contains("shard")) {
    const json& sh = c.at("shard");
    const bool ok = sh.is_array() && sh.size() == 2 && sh[0].is_number_integer() && sh[1].is_number_integer() &&
                    sh[0].get<int64_t>() >= 0 && sh[1].get<int64_t>() >= 1 && sh[1].get<int64_t>() <= kMaxShards &&
                    sh[0].get<int64_t>() < sh[1].get<int64_t>();
    need("shard", ok, "must be [I, N] with 0 <= I < N <= 1048576 (--shard I/N)");
  }
  for (const char* key : {"device_variants", "plan_variants"})
    if (c.contains(key)) need(key, c.at(key).is_boolean(), "must be true or false");
  if (c.contains("kernel_sha256")) {
    static const std::regex hex("[0-9a-f]{64}");
    need("kernel_sha256",
         c.at("kernel_sha256").is_string() && std::regex_match(c.at("kernel_sha256").get<std::string>(), hex),
         "must be 64 lowercase hex digits");
  }
  if (c.contains("options")) need("options", c.at("options").is_object(), "must be an object");
}

// Why a later line cannot be used ("" when it can): the fields the readers rely on, by kind.
std::string line_problem(const json& j, const std::string& t) {
  auto is_text = [&](const char* k) { return j.contains(k) && j.at(k).is_string(); };
  auto text_or_absent = [&](const char* k) { return !j.contains(k) || j.at(k).is_string(); };
  if (t == "case") {
    if (!j.contains("i") || !j.at("i").is_number_integer() || j.at("i").get<int64_t>() < 0 ||
        j.at("i").get<int64_t>() > kMaxCases)
      return "field 'i': not a case index";
    if (!is_text("v")) return "field 'v': not a verdict";
    for (const char* k : {"c", "f", "sig", "k", "why"})
      if (!text_or_absent(k)) return std::string("field '") + k + "': not text";
    if (j.contains("e") && (!j.at("e").is_number_unsigned() || j.at("e").get<uint64_t>() > UINT32_MAX))
      return "field 'e': not a device error word";
  } else if (t == "finding") {
    static const std::regex id("[0-9]{1,9}");
    if (!is_text("id") || !std::regex_match(j.at("id").get<std::string>(), id)) return "field 'id': not a finding id";
    if (!is_text("sig") || !is_text("recipe")) return "fields 'sig' and 'recipe' must be text";
    if (j.contains("first") && !j.at("first").is_object()) return "field 'first': not a verdict";
    if (!is_text("dir")) return "field 'dir': not text";
  } else if (t == "finding-done" || t == "shrink") {
    if (!is_text("id")) return "field 'id': not a finding id";
    if (t == "finding-done" && j.contains("investigation") && !j.at("investigation").is_object())
      return "field 'investigation': not an object";
  } else if (t == "run") {
    if (j.contains("run") && !j.at("run").is_number_integer()) return "field 'run': not a whole number";
    if (j.contains("options") && !j.at("options").is_object()) return "field 'options': not an object";
    static const std::regex hex("[0-9a-f]{64}");
    if (j.contains("kernel_sha256") &&
        (!j.at("kernel_sha256").is_string() || !std::regex_match(j.at("kernel_sha256").get<std::string>(), hex)))
      return "field 'kernel_sha256': not 64 lowercase hex digits";
    if (j.contains("kernel_library") &&
        (!j.at("kernel_library").is_string() || !fs::path(j.at("kernel_library").get<std::string>()).is_absolute()))
      return "field 'kernel_library': not an absolute path";
  } else if (t == "tick" || t == "end") {
    if (j.contains("elapsed_s") && !j.at("elapsed_s").is_number()) return "field 'elapsed_s': not a number";
    if (j.contains("run") && !j.at("run").is_number_integer()) return "field 'run': not a whole number";
  } else if (t == "resource" || t == "suite-error") {
    for (const char* k : {"then", "what", "detail"})
      if (!text_or_absent(k)) return std::string("field '") + k + "': not text";
  }
  return "";
}

}  // namespace

JournalState read_journal(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec)))
    throw InputError(path, "", "journal", "no such journal (is this a campaign directory?)");
  // A regular file (not a FIFO, a device or a directory someone put there) of bounded size,
  // checked on the opened descriptor.
  FILE* in = ::fdopen(open_input_file(path, kMaxJournalBytes, "journal"), "r");
  if (in == nullptr) throw InputError(path, "", "journal", std::string("cannot be read: ") + std::strerror(errno));
  const std::unique_ptr<FILE, int (*)(FILE*)> closer(in, &std::fclose);
  JournalState s;
  std::string line;
  bool first = true;
  int64_t n = 0;
  std::map<int64_t, double> run_elapsed;  // a run's latest tick or end: a killed run has no end line
  int64_t last_run = 0;
  auto problem = [&](const std::string& why) {
    ++s.problem_lines;
    if (s.problems.size() < kMaxProblems) s.problems.push_back("line " + std::to_string(n) + ": " + why);
  };
  bool torn = false, too_long = false;
  while (next_line(in, line, torn, too_long)) {
    ++n;
    if (too_long) {
      problem("longer than " + std::to_string(kMaxJournalLine) + " bytes: skipped");
      continue;
    }
    json j = parse_json_bounded<json>(line);
    if (j.is_discarded() || !j.is_object()) {
      if (first) throw InputError(path, "", "journal", "its first line is not a vattn fuzz campaign line");
      if (torn) {
        ++s.torn_lines;
      } else {
        problem("not a JSON object: skipped");
      }
      continue;
    }
    const std::string t = j.contains("t") && j.at("t").is_string() ? j.at("t").get<std::string>() : "";
    if (first) {
      if (t != "campaign" || j.value("schema", json()) != kJournalSchema)
        throw InputError(path, "", "journal", "its first line is not a vattn fuzz campaign line");
      if (j.value("version", json()) != kJournalVersion) {
        throw InputError(path, "", "journal",
                         "journal version " + j.value("version", json()).dump() + "; this vattn reads version " +
                             std::to_string(kJournalVersion));
      }
      check_campaign_line(j, path);
      s.campaign = j;
      if (j.contains("options")) {
        s.options = j.at("options");
        s.options_line = 1;
      }
      s.kernel_sha256 = j.value("kernel_sha256", "");
      first = false;
      continue;
    }
    if (const std::string why = line_problem(j, t); !why.empty()) {
      problem("a " + (t.empty() ? std::string("line") : "'" + t + "' line") + " with " + why + ": skipped");
      continue;
    }
    if (t == "case") {
      const int64_t i = j.at("i").get<int64_t>();
      ++s.last_run_cases;
      const std::string c = j.value("c", "?");
      if (c == "long") ++s.last_run_long;
      if (!s.done.insert(i).second) {  // journaled before (two writers before the lock): counted once
        ++s.duplicate_cases;
        continue;
      }
      const std::string v = j.at("v").get<std::string>();
      ++s.by_verdict[v];
      ++s.by_class[c];
      if (v == "resource") s.not_run.insert(i);
      if (j.contains("e") && j.at("e").get<uint32_t>() != 0) s.device_errors[i] = j.at("e").get<uint32_t>();
      if (j.contains("f")) ++s.hits[j.at("f").get<std::string>()];
      if (j.value("k", "") == "ledger") ++s.tolerated[j.value("sig", "?")];
      if (j.value("k", "") == "extra") ++s.extra[j.value("sig", "?")];
      if (v == "input-error") {
        ++s.suite_errors;
        if (s.suite_error_list.size() < 100)
          s.suite_error_list.push_back({{"index", i}, {"what", "input-error"}, {"detail", j.value("why", "")}});
      }
    } else if (t == "suite-error") {
      ++s.suite_errors;
      if (s.suite_error_list.size() < 100)
        s.suite_error_list.push_back({{"what", j.value("what", "")}, {"detail", j.value("detail", "")}});
    } else if (t == "resource") {
      ++s.resource_errors;
      if (j.value("then", "") == "retry") ++s.resource_retried;
    } else if (t == "finding") {
      const std::string dir = confined_finding_dir(j.at("dir").get<std::string>());
      if (dir.empty())
        bad_field(path, n, "dir",
                  "'" + j.at("dir").get<std::string>() +
                      "' is not a finding folder inside the campaign (findings/NNN-<class>); refused");
      j["dir"] = dir;
      s.findings.push_back(j);
    } else if (t == "finding-done") {
      s.finding_done[j.at("id").get<std::string>()] = j;
    } else if (t == "shrink") {
      s.shrink[j.at("id").get<std::string>()] = j;
    } else if (t == "run") {
      ++s.runs;
      last_run = j.value("run", s.runs);
      s.last_run_cases = s.last_run_long = 0;
      s.last_end = json();
      if (j.contains("options")) {
        s.options = j.at("options");
        s.options_line = n;
      }
      if (j.contains("kernel_sha256")) s.kernel_sha256 = j.at("kernel_sha256").get<std::string>();
      if (j.contains("kernel_library")) s.kernel_library = j.at("kernel_library").get<std::string>();
    } else if (t == "tick" || t == "end") {
      const int64_t run = j.value("run", int64_t{0});
      double& e = run_elapsed[run];
      e = std::max(e, j.value("elapsed_s", 0.0));
      if (t == "end" && run == last_run) s.last_end = j;
    }
  }
  if (first) throw InputError(path, "", "journal", "empty: not a campaign journal");
  for (const auto& [run, e] : run_elapsed) s.seconds += e;
  if (run_elapsed.count(last_run)) s.last_run_seconds = run_elapsed.at(last_run);
  return s;
}

StreamConfig stream_config_of(const json& campaign) {
  StreamConfig sc;
  sc.seed = campaign.at("seed").get<uint64_t>();
  sc.budget = campaign.at("budget").get<std::string>();
  sc.device_variants = campaign.value("device_variants", false);
  sc.plan_variants = campaign.value("plan_variants", false);
  return sc;
}

}  // namespace vattn::fuzz
