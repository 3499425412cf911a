#include "read_watchdog.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
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
[[noreturn]] void expire(const std::string& message) {
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
  if (text == nullptr) return kDefaultReadTimeoutSeconds;
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

ReadWatchdog::ReadWatchdog(const std::string& path) {
  long seconds = 0;
  try {
    seconds = read_timeout_from_environment();
  } catch (const std::invalid_argument& e) {  // commands check it up front; this is the fallback
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s\n", program_label().c_str(), e.what());
    std::exit(kExitUnusableInput);
  }
  if (seconds == 0) return;
  timeout_ = std::chrono::seconds(seconds);
  message_ = program_label() + ": " + path + ": the HDF5 library did not return within " + std::to_string(seconds) +
             " s while reading it (the file is likely corrupt); set " + kReadTimeoutVariable +
             "=SECONDS to allow longer, 0 to wait without limit\n";
  std::fflush(stdout);
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
