// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/campaign/report_runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

namespace vattn::fuzz {

namespace fs = std::filesystem;

std::string report_script(const std::string& self_exe) {
  if (const char* env = std::getenv("VATTN_REPORT_SCRIPT"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  const fs::path dir = fs::path(self_exe).parent_path();
  // Installed: PREFIX/bin/vattn and PREFIX/share/vattn; a build tree: BUILD/vattn and BUILD/share/vattn.
  for (const fs::path& p :
       {dir / ".." / "share" / "vattn" / "morning_report.py", dir / "share" / "vattn" / "morning_report.py"})
    if (fs::exists(p, ec)) return p.lexically_normal().string();
  return "";
}

namespace {

// The interpreters to try: $VATTN_PYTHON alone when set; else Debian's /usr/bin/python3
// (python3-matplotlib is installed for it, and a python3 found first on PATH, e.g. pyenv's, may
// lack it), then python3 on PATH (a machine whose matplotlib lives in another Python, such as a
// GPU image's torch environment).
std::vector<std::string> pythons() {
  if (const char* env = std::getenv("VATTN_PYTHON"); env != nullptr && *env != '\0') return {env};
  std::error_code ec;
  if (fs::exists("/usr/bin/python3", ec)) return {"/usr/bin/python3", "python3"};
  return {"python3"};
}

// The generator's exit status when it cannot import matplotlib (morning_report.py).
constexpr int kMissingModule = 3;

ReportRun run_with(const std::string& interpreter, const std::string& script, const std::vector<std::string>& args) {
  ReportRun r;
  int out[2];
  if (::pipe(out) != 0) {
    r.code = 127;
    r.output = "cannot start python3 (pipe failed)";
    return r;
  }
  std::vector<std::string> argv_s{interpreter, script};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(argv_s.size() + 1);
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(out[1], STDERR_FILENO);
    ::close(out[0]);
    ::close(out[1]);
    ::execvp(interpreter.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  if (pid < 0) {
    ::close(out[0]);
    r.code = 127;
    r.output = "cannot start python3 (fork failed)";
    return r;
  }
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (r.output.size() < (1u << 16)) r.output.append(buf, static_cast<size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  while (!r.output.empty() && (r.output.back() == '\n' || r.output.back() == '\r')) r.output.pop_back();
  return r;
}

}  // namespace

ReportRun run_report(const std::string& self_exe, const std::vector<std::string>& args) {
  const std::string script = report_script(self_exe);
  if (script.empty()) {
    ReportRun r;
    r.code = 127;
    r.output = "the report generator morning_report.py was not found (set VATTN_REPORT_SCRIPT)";
    return r;
  }
  ReportRun r;
  for (const std::string& interpreter : pythons()) {
    r = run_with(interpreter, script, args);
    if (r.code != kMissingModule && r.code != 127) break;
  }
  return r;
}

std::string write_campaign_report(const std::string& self_exe, const std::string& dir) {
  const ReportRun r = run_report(self_exe, {dir});
  if (r.code == 0) return "report: " + dir + "/report.html";
  std::string why = r.output;
  const size_t last = why.rfind('\n');
  if (last != std::string::npos) why = why.substr(last + 1);  // the generator's own one-line reason comes last
  if (r.code == 127) why = why.empty() ? "python3 was not found" : why;
  return "report: not written (" + why + "); make it with `vattn report " + dir + "`";
}

}  // namespace vattn::fuzz
