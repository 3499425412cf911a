// SPDX-License-Identifier: Apache-2.0
#include "vattn/casefile/h5_error.h"

#include <hdf5.h>

#include <stdexcept>

#include "vattn/case/case.h"

namespace vattn::h5 {

namespace {

struct Innermost {
  std::string text;
  bool found = false;
};

// Walked upward, entry 0 is where the error was first detected: usually the only one that
// says something concrete (a system errno, a bad signature) rather than "unable to open".
herr_t take_first(unsigned n, const H5E_error2_t* err, void* data) {
  auto* out = static_cast<Innermost*>(data);
  if (n != 0 || out->found) return 0;
  out->found = true;
  if (err->desc != nullptr && err->desc[0] != '\0') {
    out->text = err->desc;
  } else {
    char msg[256] = {0};
    if (H5Eget_msg(err->min_num, nullptr, msg, sizeof msg) > 0) out->text = msg;
  }
  return 0;
}

std::string with_h5(const std::string& what) {
  const std::string inner = innermost_error();
  return inner.empty() ? what : what + " (HDF5: " + inner + ")";
}

}  // namespace

void silence_library_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

std::string innermost_error() {
  // Work on a copy: H5Eget_msg inside the walk would otherwise clear the stack being walked.
  const hid_t stack = H5Eget_current_stack();
  if (stack < 0) return "";
  Innermost found;
  H5Ewalk2(stack, H5E_WALK_UPWARD, take_first, &found);
  H5Eclose_stack(stack);
  return found.text;
}

void Where::read_error(const std::string& reason) const { throw InputError(file, case_name, field, reason); }

void Where::read_error_h5(const std::string& what) const { read_error(with_h5(what)); }

void Where::write_error(const std::string& reason) const {
  throw std::runtime_error(InputError(file, case_name, field, "cannot write: " + reason).what());
}

void Where::write_error_h5(const std::string& what) const { write_error(with_h5(what)); }

}  // namespace vattn::h5
