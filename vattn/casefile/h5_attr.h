// SPDX-License-Identifier: Apache-2.0
// Scalar attributes (strings, integers, floats) with type checks that name what was found.
// Readers report through Where::read_error (InputError), writers through Where::write_error.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>

#include "vattn/casefile/h5_error.h"

namespace vattn::h5 {

bool has_attr(hid_t loc, const char* name, const Where& w);
// Each read requires the attribute to exist, hold one element and be of the named class.
std::string read_string_attr(hid_t loc, const char* name, const Where& w);
int64_t read_int_attr(hid_t loc, const char* name, const Where& w);
double read_float_attr(hid_t loc, const char* name, const Where& w);

// Strings go out as variable-length UTF-8, which h5py returns as str (fixed-length would be bytes).
void write_string_attr(hid_t loc, const char* name, const std::string& value, const Where& w);
// file_type: a little-endian standard integer type, e.g. H5T_STD_I32LE.
void write_int_attr(hid_t loc, const char* name, int64_t value, hid_t file_type, const Where& w);
void write_float_attr(hid_t loc, const char* name, double value, const Where& w);

}  // namespace vattn::h5
