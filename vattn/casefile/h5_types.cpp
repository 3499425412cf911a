// SPDX-License-Identifier: Apache-2.0
#include "vattn/casefile/h5_types.h"

namespace vattn::h5 {

std::string type_name(hid_t type) {
  const size_t bits = H5Tget_size(type) * 8;
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
      return (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(bits) +
             (bits > 8 && H5Tget_order(type) == H5T_ORDER_BE ? " big-endian" : "");
    case H5T_FLOAT: return "float" + std::to_string(bits);
    case H5T_STRING: return "string";
    case H5T_BITFIELD: return "bitfield" + std::to_string(bits);
    case H5T_OPAQUE: return "opaque";
    case H5T_COMPOUND: return "compound";
    case H5T_REFERENCE: return "reference";
    case H5T_ENUM: return "enum (numpy bool or similar)";
    case H5T_VLEN: return "variable-length sequence";
    case H5T_ARRAY: return "array type";
    case H5T_TIME: return "time";
    default: return "unknown type";
  }
}

// Multi-byte integers must be little-endian (case-format.md), whatever HDF5 could convert.
bool is_integer(hid_t type, size_t bytes, bool is_signed) {
  return H5Tget_class(type) == H5T_INTEGER && H5Tget_size(type) == bytes &&
         (H5Tget_sign(type) == H5T_SGN_2) == is_signed && (bytes == 1 || H5Tget_order(type) == H5T_ORDER_LE);
}

bool is_float(hid_t type, size_t bytes) { return H5Tget_class(type) == H5T_FLOAT && H5Tget_size(type) == bytes; }

bool is_string(hid_t type) { return H5Tget_class(type) == H5T_STRING; }

}  // namespace vattn::h5
