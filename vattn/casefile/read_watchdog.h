// SPDX-License-Identifier: Apache-2.0
// Read watchdog: a deadline on reading a case file (the header, then each case, gets its own). Some
// corrupt files make the HDF5 library loop forever instead of failing (Debian 12's libhdf5: a
// variable-length string attribute whose global-heap address is garbage); the watchdog turns
// that hang into exit code 2 and one line on stderr naming the file:
//   vattn info: f.h5: the HDF5 library did not return within 120 s while reading it (a corrupt
//   file can make it loop; a large file on slow storage may just need longer: set
//   VATTN_READ_TIMEOUT=SECONDS to allow more, 0 to wait without limit)
// The deadline is watched by a thread of its own (no alarm()); when it passes, that thread writes
// the prepared message with write(2) and ends the process with _exit(2): the reading thread
// cannot be unwound from inside HDF5.
// Other corrupt files make the same library read through a wild pointer (SIGSEGV, SIGBUS). While
// a watchdog is armed, those two signals are caught the same way: the prepared message
//   vattn info: f.h5: the HDF5 library crashed (SIGSEGV) while reading it: the file is corrupt
// and _exit(2). The previous handlers are put back when the watchdog ends. Either way nothing
// after that file is read, but what was printed for earlier files stays (stdout is flushed first).
// The prepared messages live in a page of their own, made read-only once written: the same wild
// pointer that crashes the library may first have scribbled over the heap (seen with Debian 12's
// libhdf5: the message's heap buffer came out as zero bytes), and a read-only page survives that.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace vattn {

constexpr const char* kReadTimeoutVariable = "VATTN_READ_TIMEOUT";
constexpr long kDefaultReadTimeoutSeconds = 120;

// For --help of the commands that read case files.
constexpr const char* kReadTimeoutHelp =
    "environment:\n"
    "  VATTN_READ_TIMEOUT=SECONDS\n"
    "      reading a case file whose header or any one case takes longer than SECONDS (default 120)\n"
    "      ends vattn with exit code 2, naming the file (a corrupt file can make the HDF5 library\n"
    "      loop); 0: no limit. A read that crashes inside the HDF5 library (SIGSEGV, SIGBUS) also\n"
    "      ends vattn with exit code 2, naming the file";

// The timeout in seconds for a value of VATTN_READ_TIMEOUT: nullptr or "" (unset) gives the default,
// "0" disables the watchdog (returns 0). Anything but a whole number in [0, 1e9] throws
// std::invalid_argument whose what() says what is wrong with the value.
long parse_read_timeout(const char* text);
// VATTN_READ_TIMEOUT parsed as above; the std::invalid_argument names the variable. Commands
// call it right after their options, so a bad value is a usage error before any work.
long read_timeout_from_environment();
// What both readers (this watchdog, isolated_reader.h) say after "FILE: " when libhdf5 fails a
// read: a crash on signal `signal_name` ("SIGSEGV"), or no return within `seconds`.
std::string hdf5_crash_reason(const char* signal_name);
std::string hdf5_timeout_reason(long seconds);
// The start of the expiry message, e.g. "vattn info" (main sets it; default "vattn").
void set_read_watchdog_label(const std::string& label);

// Armed for `path` while it lives (RAII; declare it before the file handle so that closing the
// file is watched too). Reads VATTN_READ_TIMEOUT when constructed; an invalid value is a usage
// error: the message goes to stderr and the process exits with code 2. Before arming, stdout is
// flushed, so that what was printed for earlier files survives an expiry.
class ReadWatchdog {
 public:
  explicit ReadWatchdog(const std::string& path);
  ~ReadWatchdog();
  ReadWatchdog(const ReadWatchdog&) = delete;
  ReadWatchdog& operator=(const ReadWatchdog&) = delete;

  // Progress was made (one case read): the full timeout starts again, so a long healthy file
  // with many cases is not cut off, while a single stuck call still is.
  void restart();

  // The line the crash guard writes for signal `sig` (SIGSEGV or SIGBUS), and the one the
  // deadline writes; prepared when armed, so reading them from a signal handler allocates nothing.
  std::string_view crash_message(int sig) const noexcept;
  std::string_view timeout_message() const noexcept;

 private:
  void watch();

  void arm_crash_guard();
  void disarm_crash_guard();

  std::chrono::seconds timeout_{0};
  // The three messages, prepared before arming (the expiry path only calls write(2) and _exit(2)),
  // in a read-only mapping of their own (see above); nullptr if no mapping could be had.
  const char* messages_ = nullptr;
  size_t messages_size_ = 0;
  const char* outer_ = nullptr;  // the messages of the guard armed before this one (nested reads)
  bool installed_ = false;       // this guard installed the signal handlers (the outermost one)
  std::mutex mutex_;
  std::condition_variable wake_;
  std::chrono::steady_clock::time_point deadline_;
  bool done_ = false;
  std::thread thread_;  // not joinable when disabled (0) or when no thread could be started
};

}  // namespace vattn
