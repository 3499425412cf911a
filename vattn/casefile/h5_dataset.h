// SPDX-License-Identifier: Apache-2.0
// Whole-dataset reads and writes. Reads check the dataspace is a plain array and convert to
// the memory type asked for (callers check the file type first: HDF5 would happily turn
// float data into integers). Writes chunk, shuffle and deflate anything over 64 KiB.
#pragma once

#include <hdf5.h>

#include <new>
#include <string>
#include <vector>

#include "vattn/casefile/h5_error.h"
#include "vattn/casefile/h5_handle.h"

namespace vattn::h5 {

constexpr size_t kChunkThresholdBytes = 64 * 1024;  // smaller datasets stay contiguous
constexpr size_t kChunkTargetBytes = 256 * 1024;
constexpr unsigned kDeflateLevel = 4;

// Whether `name` exists in `loc`; one that exists must be a hard link (require_hard_link).
bool has_link(hid_t loc, const char* name, const Where& w);
// A case file holds its objects itself: an external, soft or user-defined link is a read_error,
// decided from the link alone (nothing is followed).
void require_hard_link(hid_t loc, const char* name, const Where& w);
// Its data must be in this file, readable here: a virtual dataset, external raw storage or a
// filter this libhdf5 lacks (say LZF) is a read_error naming it, decided from the dataset's
// creation properties before any of its data is read.
void require_storage_inside(hid_t dataset, const char* name, const Where& w);
// Opens `name` (one path component) as a dataset; a missing one, a group, a link that is not
// hard or storage outside the file is a read_error.
Dataset open_dataset(hid_t loc, const char* name, const Where& w);
Type dataset_type(hid_t dataset, const Where& w);
std::vector<hsize_t> dataset_dims(hid_t dataset, const Where& w);
// "[9, 4, 32]"
std::string dims_text(const std::vector<hsize_t>& dims);

void read_raw(hid_t dataset, hid_t mem_type, void* buf, size_t count, const Where& w);

// A dataset must store what its dataspace declares: one whose storage was never (or only partly)
// written holds nothing but fill values, and a tiny file could declare gigabytes that way. A
// read_error, decided before anything is allocated for it.
void require_written(hid_t dataset, size_t count, const Where& w);

template <class T>
std::vector<T> read_dataset(hid_t dataset, hid_t mem_type, const Where& w) {
  size_t count = 1;
  for (hsize_t d : dataset_dims(dataset, w)) count *= static_cast<size_t>(d);
  require_written(dataset, count, w);
  std::vector<T> data;
  try {
    data.resize(count);
  } catch (const std::bad_alloc&) {
    w.read_error("cannot allocate " + std::to_string(count) + " elements to read it");
  }
  read_raw(dataset, mem_type, data.data(), count, w);
  return data;
}

// Creates dataset `name` of file_type with shape dims from data (mem_type, row-major).
// Returns it open so the caller can add attributes.
Dataset write_dataset(hid_t loc, const char* name, hid_t file_type, hid_t mem_type, const void* data,
                      const std::vector<hsize_t>& dims, const Where& w);

// Creation property list without timestamps, so the same cases give the same bytes.
Plist untimed_create_plist(hid_t plist_class, const Where& w);

}  // namespace vattn::h5
