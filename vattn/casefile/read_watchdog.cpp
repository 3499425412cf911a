// SPDX-License-Identifier: Apache-2.0
#include "vattn/casefile/read_watchdog.h"

#include "vattn/case/fd_write.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
  write_all(STDERR_FILENO, message.data(), message.size());
  ::_exit(kExitUnusableInput);
}

// A message page: three lengths, then the crash (SIGSEGV), crash (SIGBUS) and timeout texts back
// to back. Written once, then made read-only (read_watchdog.h says why).
struct MessageLengths {
  uint32_t segv, bus, timeout;
};

std::string_view page_text(const char* page, int which) noexcept {
  MessageLengths n;
  std::memcpy(&n, page, sizeof n);
  const char* text = page + sizeof n;
  if (which == 0) return {text, n.segv};
  if (which == 1) return {text + n.segv, n.bus};
  return {text + n.segv + n.bus, n.timeout};
}

// Maps a page holding the three messages and makes it read-only; nullptr if that fails (the
// guard then writes the generic lines below).
const char* map_messages(const std::string& segv, const std::string& bus, const std::string& timeout, size_t* size) {
  const MessageLengths n{static_cast<uint32_t>(segv.size()), static_cast<uint32_t>(bus.size()),
                         static_cast<uint32_t>(timeout.size())};
  const long page = ::sysconf(_SC_PAGESIZE);
  const size_t want = sizeof n + segv.size() + bus.size() + timeout.size();
  const size_t bytes = (want + page - 1) / page * page;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  char* out = static_cast<char*>(p);
  std::memcpy(out, &n, sizeof n);
  // The texts are stored back to back without terminators on purpose: page_text() cuts them out
  // by the lengths above, and the handler write(2)s exactly that many bytes.
  // NOLINTBEGIN(bugprone-not-null-terminated-result)
  std::memcpy(out + sizeof n, segv.data(), segv.size());
  std::memcpy(out + sizeof n + segv.size(), bus.data(), bus.size());
  std::memcpy(out + sizeof n + segv.size() + bus.size(), timeout.data(), timeout.size());
  // NOLINTEND(bugprone-not-null-terminated-result)
  if (::mprotect(p, bytes, PROT_READ) != 0) {
    ::munmap(p, bytes);
    return nullptr;
  }
  *size = bytes;
  return out;
}

constexpr std::string_view kGenericCrash =
    "vattn: the HDF5 library crashed while reading a case file: the file is corrupt\n";
constexpr std::string_view kGenericTimeout =
    "vattn: the HDF5 library did not return in time while reading a case file (set VATTN_READ_TIMEOUT "
    "to allow more, 0 for no limit)\n";

// The crash guard's state: the messages of the innermost armed watchdog (what the handler
// writes), how many are armed, and the handlers the outermost one replaced. Reads happen on one
// thread at a time; only that thread changes these.
const char* volatile g_armed_messages = nullptr;
int g_armed_depth = 0;
struct sigaction g_old_segv, g_old_bus;
alignas(16) char g_alt_stack[64 * 1024];  // the handler still runs when the fault was a stack overflow

extern "C" void on_read_crash(int sig) {
  const char* page = g_armed_messages;
  expire(page == nullptr ? kGenericCrash : page_text(page, sig == SIGBUS ? 1 : 0));
}

}  // namespace

void set_read_watchdog_label(const std::string& label) { program_label() = label; }

std::string hdf5_crash_reason(const char* signal_name) {
  return std::string("the HDF5 library crashed (") + signal_name + ") while reading it: the file is corrupt";
}

std::string hdf5_timeout_reason(long seconds) {
  return "the HDF5 library did not return within " + std::to_string(seconds) +
         " s while reading it (a corrupt file can make it loop; a large file on slow storage may just need longer: "
         "set " +
         kReadTimeoutVariable + "=SECONDS to allow more, 0 to wait without limit)";
}

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
  return messages_ == nullptr ? kGenericCrash : page_text(messages_, sig == SIGBUS ? 1 : 0);
}

std::string_view ReadWatchdog::timeout_message() const noexcept {
  return messages_ == nullptr ? kGenericTimeout : page_text(messages_, 2);
}

void ReadWatchdog::arm_crash_guard() {
  outer_ = g_armed_messages;
  g_armed_messages = messages_;
  installed_ = g_armed_depth++ == 0;
  if (!installed_) return;  // the outer watchdog installed the handler
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
  g_armed_messages = outer_;
  --g_armed_depth;
  if (!installed_) return;
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
  const std::string head = program_label() + ": " + path + ": ";
  messages_ = map_messages(head + hdf5_crash_reason("SIGSEGV") + "\n", head + hdf5_crash_reason("SIGBUS") + "\n",
                           head + hdf5_timeout_reason(seconds) + "\n", &messages_size_);
  arm_crash_guard();
  if (seconds == 0) return;
  timeout_ = std::chrono::seconds(seconds);
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
  if (thread_.joinable()) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  if (messages_ != nullptr) ::munmap(const_cast<char*>(messages_), messages_size_);
}

void ReadWatchdog::restart() {
  if (!thread_.joinable()) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  deadline_ = std::chrono::steady_clock::now() + timeout_;
}

void ReadWatchdog::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!done_) {
    if (std::chrono::steady_clock::now() >= deadline_) expire(timeout_message());
    const auto until = deadline_;  // restart() may move deadline_ while this thread waits
    wake_.wait_until(lock, until);
  }
}

}  // namespace vattn
