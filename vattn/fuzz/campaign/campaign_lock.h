// SPDX-License-Identifier: Apache-2.0
// One writer per campaign folder: `vattn fuzz --out DIR` and `--resume DIR` hold an exclusive
// flock(2) on DIR/.lock for the supervisor's life (the file holds the holder's pid; it stays when
// the campaign ends, and the lock goes with the process, also on kill -9). Readers (`vattn
// report`, `vattn fuzz-merge`) take no lock; they ask campaign_lock_holder before writing into a
// folder and refuse one a live campaign holds.
#pragma once

#include <string>

namespace vattn::fuzz {

constexpr const char* kLockFile = ".lock";

class CampaignLock {
 public:
  CampaignLock() = default;
  ~CampaignLock();
  CampaignLock(const CampaignLock&) = delete;
  CampaignLock& operator=(const CampaignLock&) = delete;
  CampaignLock(CampaignLock&& other) noexcept;
  CampaignLock& operator=(CampaignLock&& other) noexcept;

  // Takes DIR/.lock (opened O_NOFOLLOW|O_CLOEXEC, created when missing) and writes this process's
  // pid into it. Throws InputError (field `--out` or `--resume`, as `option` says) when another
  // process holds it, naming that process's pid when the file says it, or when the file cannot be
  // opened (a link planted there is refused).
  static CampaignLock acquire(const std::string& dir, const std::string& option);

  bool held() const { return fd_ >= 0; }
  // Whether acquire created the lock file (a campaign that cannot start removes what it made).
  bool created_file() const { return created_; }
  // Removes the lock file and lets the lock go.
  void remove_file();

 private:
  int fd_ = -1;
  bool created_ = false;
  std::string path_;
};

// The pid of the live process that holds DIR/.lock, -1 when one holds it but its pid is not
// known, 0 when none does (no lock file, or nothing holds it). Takes nothing, creates nothing.
long campaign_lock_holder(const std::string& dir);

// "another campaign (pid N) holds DIR (DIR/.lock)": the reason every refusal gives.
std::string held_by_text(const std::string& dir, long pid);

}  // namespace vattn::fuzz
