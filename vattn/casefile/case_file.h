// SPDX-License-Identifier: Apache-2.0
// Case files: reader, writer and header for the HDF5 schema of docs/case-format.md (v1).
// HDF5 library errors never abort or print their own stack: they become InputError (reading)
// or std::runtime_error (writing) naming the file, the case and the field.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "vattn/case/case.h"

namespace vattn {

constexpr const char* kCaseFormatName = "vattn-cases";
constexpr int kCaseFormatVersion = 1;

struct CaseFileHeader {
  std::string source;     // "capture:<server>", "synthetic:<profile>", "fuzz:<revision>", "fixture"
  std::string created;    // ISO-8601; filled with the current UTC time when empty on write
  std::string generator;  // tool name and version; "vattn <version>" when empty on write
  std::map<std::string, std::string> optional;  // model, gpu, notes
  int format_version = kCaseFormatVersion;
};

struct CaseFile {
  std::string path;
  CaseFileHeader header;
  std::vector<Case> cases;  // in group-name order (capture order)
};

// Lists the case group names under /cases/, sorted. Throws InputError.
std::vector<std::string> list_cases(const std::string& path);

// Throws InputError naming the file and `name`, and the first cases there are, when `name` is
// not among the file's case `names`.
void require_case(const std::vector<std::string>& names, const std::string& name, const std::string& path);

// Reads the file; with only_case non-empty, returns that case alone (InputError if absent).
// Every case of the file is read and validate()d, the others too when only_case is set (a file
// that fails validation is never replayed in part), unless validate_cases is false (tests of the
// validator; then only only_case is read).
CaseFile read_case_file(const std::string& path, const std::string& only_case = "", bool validate_cases = true);

// Writes a complete file (replacing it). Large datasets are chunked, shuffled and deflated. The
// file is built in memory and written by replace_file (vattn/case/fd_write.h): a fresh temporary
// beside `path` (O_EXCL|O_NOFOLLOW, a random name), fsync'd and renamed into place. A `path` that
// is a symbolic link or not a regular file is refused (a caller that means to write through a
// link the user named resolves it first: write_target.h). Throws std::runtime_error naming the
// path: an invalid case (InputError's text), or the system's reason (a full disk, `ulimit -f`).
void write_case_file(const std::string& path, const CaseFileHeader& header, const std::vector<Case>& cases);

// One case at a time, in this process and without a watchdog: the reader inside the isolated
// child (isolated_reader.h) and tests. Opens the file and reads its header and case names.
class CaseFileCursor {
 public:
  explicit CaseFileCursor(const std::string& path);  // throws InputError
  ~CaseFileCursor();
  CaseFileCursor(const CaseFileCursor&) = delete;
  CaseFileCursor& operator=(const CaseFileCursor&) = delete;
  const CaseFileHeader& header() const;
  const std::vector<std::string>& names() const;
  // Reads case `name` (one of names()); with `validate`, also validate() and the recipe check.
  Case read(const std::string& name, bool validate) const;

 private:
  struct Impl;
  Impl* impl_;
};

// Adds or replaces outputs/<producer> of one case in an existing file.
void write_case_output(const std::string& path, const std::string& case_name, const StoredOutput& output);

}  // namespace vattn
