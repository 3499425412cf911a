// SPDX-License-Identifier: Apache-2.0
#include "vattn/case/fd_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>

namespace vattn {

bool write_all(int fd, const void* data, size_t n) noexcept {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

namespace {

std::string reason(int err) { return std::strerror(err); }

// Six characters of [a-z0-9] from a per-thread generator seeded by the system.
std::string random_suffix() {
  thread_local std::mt19937_64 gen{(static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}() ^
                                   static_cast<uint64_t>(::getpid())};
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string s(6, 'x');
  for (char& c : s) c = kChars[gen() % (sizeof kChars - 1)];
  return s;
}

void sync_folder(const std::string& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

std::string replace_file(const std::string& path, const std::string& bytes, Durability durability) {
  return replace_file(path, bytes.data(), bytes.size(), durability);
}

std::string replace_problem(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) return path + ": is a symbolic link; refusing to write through it";
    if (!S_ISREG(st.st_mode)) return path + ": exists and is not a regular file";
  } else if (errno != ENOENT) {
    return path + ": " + reason(errno);
  }
  return "";
}

std::string replace_file(const std::string& path, const void* data, size_t n, Durability durability) {
  if (std::string why = replace_problem(path); !why.empty()) return why;
  const size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = path + ".tmp-" + random_suffix();
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) return tmp + ": cannot create: " + reason(errno);
  }
  if (fd < 0) return path + ": no free temporary name beside it after 100 tries";
  bool ok = write_all(fd, data, n);
  if (ok && durability == Durability::kSynced) ok = ::fsync(fd) == 0;
  int err = ok ? 0 : errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    return path + ": cannot be written: " + reason(err);
  }
  if (durability == Durability::kSynced) sync_folder(folder);
  return "";
}

}  // namespace vattn
