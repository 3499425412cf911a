// SPDX-License-Identifier: Apache-2.0
// Writing a whole buffer to a file descriptor: short writes and EINTR are retried. Only write(2)
// is called, so the read watchdog's signal-handler path may use it too. And the one way the suite
// replaces a file it owns (a campaign's summary.json, finding.json, mix.json, a report): never
// through a symbolic link, never by a name another writer could be using.
#pragma once

#include <cstddef>
#include <string>

namespace vattn {

// Writes all `n` bytes of `data` to `fd`; false on an error (the descriptor closed, the disk full).
bool write_all(int fd, const void* data, size_t n) noexcept;

// Whether replace_file makes the data durable before it returns.
enum class Durability { kBuffered, kSynced };

// Replaces the file `path` with `bytes`. They go to a fresh temporary in the same folder
// (`NAME.tmp-XXXXXX`, a random suffix, opened O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, so
// nothing planted under that name is followed or reused), are written whole, fsync'd with
// kSynced (the folder too, after the rename), and the temporary is renamed over `path`. An
// existing `path` that is a symbolic link, or anything but a regular file, is refused. Returns ""
// or why not, naming the path and the system's reason; on failure the temporary is removed and
// `path` is as it was.
std::string replace_file(const std::string& path, const std::string& bytes, Durability durability);
// The same for `n` bytes at `data` (a case file's image: no copy into a string).
std::string replace_file(const std::string& path, const void* data, size_t n, Durability durability);

// What replace_file would refuse before writing anything (`path` a symbolic link or not a
// regular file), or "": for a writer that first builds something large.
std::string replace_problem(const std::string& path);

}  // namespace vattn
