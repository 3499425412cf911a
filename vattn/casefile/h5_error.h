// SPDX-License-Identifier: Apache-2.0
// HDF5 failures as project errors. The library's own stack printing is switched off; instead
// the innermost message of its error stack (the most specific one, e.g. "No such file or
// directory") is folded into an InputError (reading) or std::runtime_error (writing).
#pragma once

#include <string>

namespace vattn::h5 {

// Turns off HDF5's automatic stack printing. Cheap; every entry point calls it first.
void silence_library_errors();

// Text of the innermost error on the current HDF5 error stack ("" when it is empty).
// Call it right after the failing call: the next API call clears the stack.
std::string innermost_error();

// Where an error happened, for messages: file, case (may be empty), field (may be empty).
struct Where {
  std::string file, case_name, field;

  Where at(std::string other_field) const { return Where{file, case_name, std::move(other_field)}; }
  [[noreturn]] void read_error(const std::string& reason) const;
  // Reading failed inside HDF5: the reason gets the library's innermost message appended.
  [[noreturn]] void read_error_h5(const std::string& what) const;
  [[noreturn]] void write_error(const std::string& reason) const;
  [[noreturn]] void write_error_h5(const std::string& what) const;
};

}  // namespace vattn::h5
