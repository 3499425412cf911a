// SPDX-License-Identifier: Apache-2.0
#include "vattn/case/file_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "vattn/case/case.h"

namespace vattn {

namespace {

std::string size_text(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (unit < 4 && bytes >= (uint64_t{1} << 10 * (unit + 1)) && bytes % (uint64_t{1} << 10 * (unit + 1)) == 0) ++unit;
  return std::to_string(bytes >> 10 * unit) + " " + kUnits[unit];
}

[[noreturn]] void refuse(const std::string& path, const std::string& field, const std::string& reason) {
  throw InputError(path, "", field, reason);
}

std::string too_large(uint64_t have, uint64_t most) {
  return "is " + std::to_string(have) + " bytes, more than such a file may hold (" + size_text(most) + ")";
}

}  // namespace

int open_input_file(const std::string& path, uint64_t max_bytes, const std::string& field) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int err = errno;
    refuse(path, field, std::string("cannot be opened: ") + std::strerror(err));
  }
  struct stat st {};
  std::string why;
  if (::fstat(fd, &st) != 0)
    why = std::string("cannot be examined: ") + std::strerror(errno);
  else if (S_ISDIR(st.st_mode))
    why = "is a directory, not a file";
  else if (!S_ISREG(st.st_mode))
    why = "is not a regular file (a device, a pipe or a socket)";
  else if (static_cast<uint64_t>(st.st_size) > max_bytes)
    why = too_large(static_cast<uint64_t>(st.st_size), max_bytes);
  else if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
    why = std::string("cannot be read: ") + std::strerror(errno);
  if (!why.empty()) {
    ::close(fd);
    refuse(path, field, why);
  }
  return fd;
}

std::string read_input_file(const std::string& path, uint64_t max_bytes, const std::string& field) {
  const int fd = open_input_file(path, max_bytes, field);
  struct stat st {};
  std::string bytes;
  if (::fstat(fd, &st) == 0) bytes.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  std::string why;
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      why = std::string("read error: ") + std::strerror(errno);
      break;
    }
    if (n == 0) break;
    if (bytes.size() + static_cast<size_t>(n) > max_bytes) {  // it grew while being read
      why = too_large(bytes.size() + static_cast<size_t>(n), max_bytes);
      break;
    }
    bytes.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (!why.empty()) refuse(path, field, why);
  return bytes;
}

}  // namespace vattn
