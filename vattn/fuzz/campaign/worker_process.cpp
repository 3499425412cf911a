// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/campaign/worker_process.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vattn/case/resource_error.h"
#include "vattn/fuzz/protocol/protocol.h"

namespace vattn::fuzz {

namespace {
// A failed pipe() or fork(): a resource the machine is short of now, or something else.
[[noreturn]] void spawn_failed(const char* call, int err) {
  const std::string what = std::string(call) + ": " + std::strerror(err);
  if (err == EMFILE || err == ENFILE) throw ResourceError("file descriptors", what);
  if (err == ENOMEM) throw ResourceError("host memory", what);
  if (err == EAGAIN) throw ResourceError("processes", what);
  throw std::runtime_error(what);
}
}  // namespace

WorkerProcess::~WorkerProcess() { kill_group(); }

void WorkerProcess::close_fds() {
  if (cmd_fd_ >= 0) ::close(cmd_fd_);
  if (rep_fd_ >= 0) ::close(rep_fd_);
  cmd_fd_ = rep_fd_ = -1;
}

void WorkerProcess::spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                          const std::string& log_path, int nice_increment) {
  kill_group();
  int cmd[2], rep[2];
  if (::pipe2(cmd, O_CLOEXEC) != 0) spawn_failed("pipe", errno);
  if (::pipe2(rep, O_CLOEXEC) != 0) {
    const int err = errno;
    ::close(cmd[0]);
    ::close(cmd[1]);
    spawn_failed("pipe", err);
  }
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    for (int fd : {cmd[0], cmd[1], rep[0], rep[1], log})
      if (fd >= 0) ::close(fd);
    spawn_failed("fork", err);
  }
  if (pid == 0) {
    // Child: only async-signal-safe work until exec (the supervisor is single-threaded, but be strict).
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the supervisor died before prctl took effect
    ::dup2(cmd[0], STDIN_FILENO);
    ::dup2(rep[1], kReportFd);
    if (log >= 0) {
      ::dup2(log, STDOUT_FILENO);
      ::dup2(log, STDERR_FILENO);
    }
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    if (nice_increment != 0) (void)::nice(nice_increment);
    ::signal(SIGPIPE, SIG_DFL);
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from the parent: no race with a kill before the child ran setpgid
  ::close(cmd[0]);
  ::close(rep[1]);
  if (log >= 0) ::close(log);
  pid_ = pid;
  cmd_fd_ = cmd[1];
  rep_fd_ = rep[0];
  ::fcntl(rep_fd_, F_SETFL, ::fcntl(rep_fd_, F_GETFL) | O_NONBLOCK);
}

bool WorkerProcess::exited(int* status) {
  if (pid_ <= 0) return true;
  int st = 0;
  const pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    if (status) *status = st;
    ::kill(-pid_, SIGKILL);  // anything the worker left behind in its group
    pid_ = -1;
    close_fds();
    return true;
  }
  return false;
}

void WorkerProcess::kill_group() {
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int st = 0;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  close_fds();
}

void WorkerProcess::stop(double seconds) {
  if (pid_ <= 0) return;
  if (cmd_fd_ >= 0) {
    send_message(cmd_fd_, json{{"op", "quit"}});
    ::close(cmd_fd_);
    cmd_fd_ = -1;
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (exited(nullptr)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill_group();
}

namespace {
// The signals a dying worker shows (glibc's sigabbrev_np is newer than some GPU machines' libc).
const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGTRAP: return "SIGTRAP";
    case SIGPIPE: return "SIGPIPE";
    case SIGSYS: return "SIGSYS";
    case SIGXCPU: return "SIGXCPU";
    default: return nullptr;
  }
}
}  // namespace

std::string describe_wait_status(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = signal_name(sig);
    return "signal " + std::to_string(sig) + (name ? std::string(" (") + name + ")" : "");
  }
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  return "wait status " + std::to_string(status);
}

}  // namespace vattn::fuzz
