// SPDX-License-Identifier: Apache-2.0
// Reading a file the suite was handed (a ledger, a summary, a finding, a bench report, a mix
// table, a journal). Every such file is untrusted: a name that is /dev/zero, a FIFO, a directory
// or a file of gigabytes must end in a clear error naming it, never in a read that blocks forever
// or grows memory without bound. These are the one place that check is made.
#pragma once

#include <cstdint>
#include <string>

namespace vattn {

// Opens `path` for reading and checks what was opened: a regular file (a link to one is
// followed) of at most `max_bytes`. The open itself cannot block (O_NONBLOCK, so a FIFO with no
// writer is refused rather than waited on; the flag is dropped once the file is known to be
// regular), and the check is made on the opened descriptor, so a file swapped in between is seen.
// Returns the descriptor (O_CLOEXEC; the caller closes it). Throws InputError(path, "", field,
// reason): missing, unreadable, a directory, not a regular file (a device, a pipe or a socket),
// or larger than `max_bytes`.
int open_input_file(const std::string& path, uint64_t max_bytes, const std::string& field);

// The whole content of `path`, checked as open_input_file checks it; a file that grows past
// `max_bytes` while it is read is refused too. Throws InputError as above, or on a read error.
std::string read_input_file(const std::string& path, uint64_t max_bytes, const std::string& field);

}  // namespace vattn
