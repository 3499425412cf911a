// SPDX-License-Identifier: Apache-2.0
#include "vattn/casefile/h5_attr.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "vattn/casefile/h5_handle.h"
#include "vattn/casefile/h5_types.h"

namespace vattn::h5 {

namespace {

std::string quoted(const char* name) { return std::string("attribute '") + name + "'"; }

// Opens a one-element attribute and returns it with its file type.
Attr open_scalar(hid_t loc, const char* name, const Where& w, Type& type_out) {
  if (!has_attr(loc, name, w)) w.read_error("missing " + quoted(name));
  Attr a(H5Aopen(loc, name, H5P_DEFAULT));
  if (!a.valid()) w.read_error_h5("cannot open " + quoted(name));
  Space space(H5Aget_space(a.get()));
  if (!space.valid()) w.read_error_h5("cannot read the shape of " + quoted(name));
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n != 1) w.read_error(quoted(name) + " must hold one value, holds " + std::to_string(n));
  type_out = Type(H5Aget_type(a.get()));
  if (!type_out.valid()) w.read_error_h5("cannot read the type of " + quoted(name));
  return a;
}

Space scalar_space(const Where& w) {
  Space s(H5Screate(H5S_SCALAR));
  if (!s.valid()) w.write_error_h5("cannot create a scalar dataspace");
  return s;
}

void write_scalar(hid_t loc, const char* name, hid_t file_type, hid_t mem_type, const void* value, const Where& w) {
  const Space space = scalar_space(w);
  Attr a(H5Acreate2(loc, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT));
  if (!a.valid()) w.write_error_h5("cannot create " + quoted(name));
  if (H5Awrite(a.get(), mem_type, value) < 0) w.write_error_h5("cannot write " + quoted(name));
  if (a.close() < 0) w.write_error_h5("cannot close " + quoted(name));
}

}  // namespace

bool has_attr(hid_t loc, const char* name, const Where& w) {
  const htri_t exists = H5Aexists(loc, name);
  if (exists < 0) w.read_error_h5("cannot look up " + quoted(name));
  return exists > 0;
}

std::string read_string_attr(hid_t loc, const char* name, const Where& w) {
  Type type;
  const Attr a = open_scalar(loc, name, w, type);
  if (!is_string(type.get())) w.read_error(quoted(name) + ": expected a string, found " + type_name(type.get()));

  if (H5Tis_variable_str(type.get()) > 0) {
    Type mem(H5Tcopy(H5T_C_S1));
    if (!mem.valid() || H5Tset_size(mem.get(), H5T_VARIABLE) < 0 ||
        H5Tset_cset(mem.get(), H5Tget_cset(type.get())) < 0) {
      w.read_error_h5("cannot build a string type for " + quoted(name));
    }
    char* text = nullptr;
    if (H5Aread(a.get(), mem.get(), &text) < 0) w.read_error_h5("cannot read " + quoted(name));
    std::string value = text != nullptr ? text : "";
    H5free_memory(text);
    return value;
  }

  const size_t size = H5Tget_size(type.get());
  std::vector<char> buf(size + 1, '\0');
  if (H5Aread(a.get(), type.get(), buf.data()) < 0) w.read_error_h5("cannot read " + quoted(name));
  std::string value(buf.data(), size);
  if (H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD) {
    value.erase(value.find_last_not_of(' ') + 1);
  } else {
    value.erase(std::min(value.find('\0'), value.size()));
  }
  return value;
}

int64_t read_int_attr(hid_t loc, const char* name, const Where& w) {
  Type type;
  const Attr a = open_scalar(loc, name, w, type);
  if (H5Tget_class(type.get()) != H5T_INTEGER) {
    w.read_error(quoted(name) + ": expected an integer, found " + type_name(type.get()));
  }
  if (H5Tget_size(type.get()) > 1 && H5Tget_order(type.get()) != H5T_ORDER_LE) {  // "All integers little-endian"
    w.read_error(quoted(name) + ": expected a little-endian integer, found " + type_name(type.get()));
  }
  if (H5Tget_size(type.get()) == 8 && H5Tget_sign(type.get()) == H5T_SGN_NONE) {
    uint64_t u = 0;
    if (H5Aread(a.get(), H5T_NATIVE_UINT64, &u) < 0) w.read_error_h5("cannot read " + quoted(name));
    if (u > static_cast<uint64_t>(INT64_MAX)) w.read_error(quoted(name) + " = " + std::to_string(u) + " is too large");
    return static_cast<int64_t>(u);
  }
  int64_t value = 0;
  if (H5Aread(a.get(), H5T_NATIVE_INT64, &value) < 0) w.read_error_h5("cannot read " + quoted(name));
  return value;
}

double read_float_attr(hid_t loc, const char* name, const Where& w) {
  Type type;
  const Attr a = open_scalar(loc, name, w, type);
  // float64 only: a float32 scale would be widened silently, and replay would then recompute
  // with another scale than the server used.
  if (H5Tget_class(type.get()) != H5T_FLOAT || H5Tget_size(type.get()) != 8) {
    w.read_error(quoted(name) + ": expected float64, found " + type_name(type.get()));
  }
  double value = 0;
  if (H5Aread(a.get(), H5T_NATIVE_DOUBLE, &value) < 0) w.read_error_h5("cannot read " + quoted(name));
  return value;
}

void write_string_attr(hid_t loc, const char* name, const std::string& value, const Where& w) {
  Type type(H5Tcopy(H5T_C_S1));
  if (!type.valid() || H5Tset_size(type.get(), H5T_VARIABLE) < 0 || H5Tset_cset(type.get(), H5T_CSET_UTF8) < 0) {
    w.write_error_h5("cannot build a UTF-8 string type for " + quoted(name));
  }
  const char* text = value.c_str();
  write_scalar(loc, name, type.get(), type.get(), &text, w);
}

void write_int_attr(hid_t loc, const char* name, int64_t value, hid_t file_type, const Where& w) {
  write_scalar(loc, name, file_type, H5T_NATIVE_INT64, &value, w);
}

void write_float_attr(hid_t loc, const char* name, double value, const Where& w) {
  write_scalar(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value, w);
}

}  // namespace vattn::h5
