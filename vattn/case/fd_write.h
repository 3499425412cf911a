// SPDX-License-Identifier: Apache-2.0
// Writing a whole buffer to a file descriptor: short writes and EINTR are retried. Only write(2)
// is called, so the read watchdog's signal-handler path may use it too.
#pragma once

#include <cstddef>

namespace vattn {

// Writes all `n` bytes of `data` to `fd`; false on an error (the descriptor closed, the disk full).
bool write_all(int fd, const void* data, size_t n) noexcept;

}  // namespace vattn
