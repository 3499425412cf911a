// SPDX-License-Identifier: Apache-2.0
// Owning wrappers for HDF5 identifiers, so every early exit (an InputError mid-read) still
// closes what was opened: a leaked id keeps the file open and locked for the process.
#pragma once

#include <hdf5.h>

#include <utility>

namespace vattn::h5 {

template <herr_t (*Close)(hid_t)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) : id_(id) {}
  ~Handle() { reset(); }
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes now and reports the status: a writer must see a failed flush on close.
  herr_t close() {
    const herr_t status = id_ >= 0 ? Close(id_) : 0;
    id_ = H5I_INVALID_HID;
    return status;
  }
  void reset() { close(); }
  // Gives up ownership (e.g. an H5Oopen id, once known to be a dataset, moves into a Dataset).
  hid_t release() { return std::exchange(id_, H5I_INVALID_HID); }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

using File = Handle<H5Fclose>;
using Group = Handle<H5Gclose>;
using Object = Handle<H5Oclose>;
using Dataset = Handle<H5Dclose>;
using Space = Handle<H5Sclose>;
using Type = Handle<H5Tclose>;  // only for types we own (H5Tcopy, H5Dget_type), never predefined ones
using Attr = Handle<H5Aclose>;
using Plist = Handle<H5Pclose>;

}  // namespace vattn::h5
