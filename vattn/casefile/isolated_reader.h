// SPDX-License-Identifier: Apache-2.0
// The isolated case-file reader: an untrusted file is read by a child process (fork, no exec)
// with resource limits (address space, CPU time), one case at a time, and each case is handed to
// this process over a pipe. A libhdf5 crash, loop or heap corruption ends the child, never the
// caller: it becomes an InputError naming the file and the case being read ("the HDF5 library
// crashed (SIGSEGV) while reading it", "did not return within N s"), what the caller already
// reported stays, and the caller goes on with the next file. The reading itself is the
// in-process CaseFileCursor; only its results cross the pipe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "vattn/casefile/case_file.h"

namespace vattn {

class IsolatedCaseReader {
 public:
  // Starts the child for `path`; only_case: read just that case (an InputError names the cases
  // there are when it is missing). Throws InputError when the child cannot start.
  IsolatedCaseReader(const std::string& path, const std::string& only_case);
  ~IsolatedCaseReader();  // ends the child if it is still reading
  IsolatedCaseReader(const IsolatedCaseReader&) = delete;
  IsolatedCaseReader& operator=(const IsolatedCaseReader&) = delete;

  // The header and the number of cases that will come (waits for the child to read them).
  const CaseFileHeader& header();
  size_t case_count();
  // The next case, validated; false at the end. Throws InputError: the file's own (as the
  // in-process reader words it), or the child's end (crash, timeout, limits).
  bool next(Case& out);

 private:
  void start_child(const std::string& only_case);
  void read_header_frame();
  [[noreturn]] void child_ended();
  bool read_exact(void* buf, size_t n);
  uint64_t read_u64();
  std::string read_string();
  // An array of the frame, its length held to the case memory limit.
  template <class T>
  void read_vec(std::vector<T>& v);

  std::string path_;
  pid_t child_ = -1;
  int fd_ = -1;
  bool have_header_ = false, done_ = false;
  CaseFileHeader header_;
  uint64_t count_ = 0;
  std::string reading_;  // the case the child said it is reading (for messages)
  long timeout_s_ = 0;
};

}  // namespace vattn
