// SPDX-License-Identifier: Apache-2.0
#include "read_watchdog.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string_view>
#include <system_error>

namespace vattn {

namespace {

constexpr int kExitUnusableInput = 2;  // the CLI's "unusable input or usage"
constexpr unsigned long long kMaxReadTimeoutSeconds = 1000000000ULL;

// Set by main() once the subcommand is known, so the messages start like the CLI's own.
std::string& program_label() {
  static std::string label = "vattn";
  return label;
}

// The expiry path: a plain thread could do more, but the reading thread is stuck at an unknown
// point inside HDF5 (possibly holding locks of the C library), so only write(2) and _exit(2).
[[noreturn]] void expire(std::string_view message) {
  const char* p = message.data();
  size_t left = message.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
  ::_exit(kExitUnusableInput);
}

// The crash guard's state: the innermost armed watchdog (its messages are what the handler
// writes) and the handlers the outermost one replaced. Reads happen on one thread at a time;
// only that thread changes these.
const ReadWatchdog* volatile g_armed = nullptr;
struct sigaction g_old_segv, g_old_bus;
alignas(16) char g_alt_stack[64 * 1024];  // the handler still runs when the fault was a stack overflow

extern "C" void on_read_crash(int sig) {
  const ReadWatchdog* armed = g_armed;
  if (armed != nullptr) expire(armed->crash_message(sig));
  ::_exit(kExitUnusableInput);
}

}  // namespace

void set_read_watchdog_label(const std::string& label) { program_label() = label; }

long read_timeout_from_environment() {
  try {
    return parse_read_timeout(std::getenv(kReadTimeoutVariable));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(kReadTimeoutVariable) + ": " + e.what());
  }
}

long parse_read_timeout(const char* text) {
  if (text == nullptr || *text == '\0') return kDefaultReadTimeoutSeconds;  // set but empty: as if unset
  const std::string s = text;
  bool digits = !s.empty();
  for (const char ch : s) digits = digits && ch >= '0' && ch <= '9';
  if (!digits) throw std::invalid_argument("'" + s + "' is not a whole number of seconds (0 for no limit)");
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
  if (errno == ERANGE || v > kMaxReadTimeoutSeconds) {
    throw std::invalid_argument("'" + s + "' is more than " + std::to_string(kMaxReadTimeoutSeconds) +
                                " seconds (0 for no limit)");
  }
  return static_cast<long>(v);
}

std::string_view ReadWatchdog::crash_message(int sig) const noexcept {
  return sig == SIGBUS ? std::string_view(crash_bus_) : std::string_view(crash_segv_);
}

void ReadWatchdog::arm_crash_guard(const std::string& path) {
  const std::string head = program_label() + ": " + path + ": the HDF5 library crashed (";
  const std::string tail = ") while reading it: the file is corrupt\n";
  crash_segv_ = head + "SIGSEGV" + tail;
  crash_bus_ = head + "SIGBUS" + tail;
  outer_ = g_armed;
  g_armed = this;
  if (outer_ != nullptr) return;  // the outer watchdog installed the handler
  stack_t alt{};
  alt.ss_sp = g_alt_stack;
  alt.ss_size = sizeof g_alt_stack;
  sigaltstack(&alt, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_read_crash;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_ONSTACK | SA_RESETHAND;  // a fault inside the handler ends the process plainly
  sigaction(SIGSEGV, &sa, &g_old_segv);
  sigaction(SIGBUS, &sa, &g_old_bus);
}

void ReadWatchdog::disarm_crash_guard() {
  g_armed = outer_;
  if (outer_ != nullptr) return;
  sigaction(SIGSEGV, &g_old_segv, nullptr);
  sigaction(SIGBUS, &g_old_bus, nullptr);
}

ReadWatchdog::ReadWatchdog(const std::string& path) {
  long seconds = 0;
  try {
    seconds = read_timeout_from_environment();
  } catch (const std::invalid_argument& e) {  // commands check it up front; this is the fallback
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s\n", program_label().c_str(), e.what());
    std::exit(kExitUnusableInput);
  }
  std::fflush(stdout);
  arm_crash_guard(path);
  if (seconds == 0) return;
  timeout_ = std::chrono::seconds(seconds);
  message_ = program_label() + ": " + path + ": the HDF5 library did not return within " + std::to_string(seconds) +
             " s while reading it (a corrupt file can make it loop; a large file on slow storage may just need "
             "longer: set " + kReadTimeoutVariable + "=SECONDS to allow more, 0 to wait without limit)\n";
  deadline_ = std::chrono::steady_clock::now() + timeout_;
  // The watcher takes no asynchronous signals: they stay with the threads that handle them.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  try {
    thread_ = std::thread(&ReadWatchdog::watch, this);
  } catch (const std::system_error&) {
    // No thread to be had (resource limits): the read goes unwatched rather than not at all.
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

ReadWatchdog::~ReadWatchdog() {
  disarm_crash_guard();
  if (!thread_.joinable()) return;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void ReadWatchdog::restart() {
  if (!thread_.joinable()) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  deadline_ = std::chrono::steady_clock::now() + timeout_;
}

void ReadWatchdog::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!done_) {
    if (std::chrono::steady_clock::now() >= deadline_) expire(message_);
    const auto until = deadline_;  // restart() may move deadline_ while this thread waits
    wake_.wait_until(lock, until);
  }
}

}  // namespace vattn
