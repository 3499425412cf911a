// SPDX-License-Identifier: Apache-2.0
#include "vattn/case/fd_write.h"

#include <unistd.h>

#include <cerrno>

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

}  // namespace vattn
