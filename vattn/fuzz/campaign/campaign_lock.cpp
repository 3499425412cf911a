// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/campaign/campaign_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "vattn/case/case.h"
#include "vattn/case/fd_write.h"

namespace vattn::fuzz {

namespace {

std::string lock_path(const std::string& dir) { return dir + "/" + kLockFile; }

// The pid written in an open lock file, or -1 when it holds none.
long pid_in(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return -1;
  char* end = nullptr;
  const long pid = std::strtol(buf, &end, 10);
  return pid > 0 && end != buf ? pid : -1;
}

}  // namespace

std::string held_by_text(const std::string& dir, long pid) {
  const std::string who = pid > 0 ? "another campaign (pid " + std::to_string(pid) + ")" : "another campaign";
  return who + " holds " + dir + " (" + lock_path(dir) + "); wait for it to stop, or stop it";
}

CampaignLock::~CampaignLock() {
  if (fd_ >= 0) ::close(fd_);
}

CampaignLock::CampaignLock(CampaignLock&& other) noexcept
    : fd_(other.fd_), created_(other.created_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

CampaignLock& CampaignLock::operator=(CampaignLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    created_ = other.created_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

CampaignLock CampaignLock::acquire(const std::string& dir, const std::string& option) {
  CampaignLock lock;
  lock.path_ = lock_path(dir);
  lock.fd_ = ::open(lock.path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (lock.fd_ >= 0) {
    lock.created_ = true;
  } else if (errno == EEXIST) {
    lock.fd_ = ::open(lock.path_.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  }
  if (lock.fd_ < 0) {
    const int err = errno;
    throw InputError(lock.path_, "", option,
                     err == ELOOP ? "is a symbolic link; the campaign's lock must be a file of its own"
                                  : std::string("cannot be opened: ") + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(lock.fd_, &st) != 0 || !S_ISREG(st.st_mode))
    throw InputError(lock.path_, "", option, "is not a regular file; the campaign's lock must be a file of its own");
  while (::flock(lock.fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    if (err == EWOULDBLOCK) throw InputError(dir, "", option, held_by_text(dir, pid_in(lock.fd_)));
    throw InputError(lock.path_, "", option, std::string("cannot be locked: ") + std::strerror(err));
  }
  const std::string pid = std::to_string(static_cast<long>(::getpid())) + "\n";
  if (::ftruncate(lock.fd_, 0) != 0 || ::lseek(lock.fd_, 0, SEEK_SET) != 0 ||
      !write_all(lock.fd_, pid.data(), pid.size()))
    throw InputError(lock.path_, "", option, std::string("cannot be written: ") + std::strerror(errno));
  return lock;
}

void CampaignLock::remove_file() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());
  ::close(fd_);
  fd_ = -1;
}

long campaign_lock_holder(const std::string& dir) {
  const int fd = ::open(lock_path(dir).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0;
  long holder = 0;
  int rc = 0;
  while ((rc = ::flock(fd, LOCK_SH | LOCK_NB)) != 0 && errno == EINTR) {
  }
  if (rc != 0 && errno == EWOULDBLOCK) holder = pid_in(fd);
  ::close(fd);  // a shared lock taken here goes with the descriptor
  return holder;
}

}  // namespace vattn::fuzz
