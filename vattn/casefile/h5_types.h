// SPDX-License-Identifier: Apache-2.0
// On-disk element types: what a file holds, named the numpy way for messages ("float32",
// "uint16"), and the checks that decide whether it can be read into a given memory type.
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <string>

namespace vattn::h5 {

// "uint16", "int32", "float32", "string", "compound", ... for error messages.
std::string type_name(hid_t type);

bool is_integer(hid_t type, size_t bytes, bool is_signed);
bool is_float(hid_t type, size_t bytes);
bool is_string(hid_t type);

}  // namespace vattn::h5
