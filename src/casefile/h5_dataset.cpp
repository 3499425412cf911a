// SPDX-License-Identifier: Apache-2.0
#include "h5_dataset.h"

#include <algorithm>

#include "h5_types.h"

namespace vattn::h5 {

// Timestamps make every write of the same data differ; goldens must not churn in git.
Plist untimed_create_plist(hid_t plist_class, const Where& w) {
  Plist p(H5Pcreate(plist_class));
  if (!p.valid() || H5Pset_obj_track_times(p.get(), 0) < 0) w.write_error_h5("cannot create a property list");
  return p;
}

bool has_link(hid_t loc, const char* name, const Where& w) {
  const htri_t exists = H5Lexists(loc, name, H5P_DEFAULT);
  if (exists < 0) w.read_error_h5(std::string("cannot look up '") + name + "'");
  return exists > 0;
}

Dataset open_dataset(hid_t loc, const char* name, const Where& w) {
  if (!has_link(loc, name, w)) w.read_error(std::string("missing dataset '") + name + "'");
  Object obj(H5Oopen(loc, name, H5P_DEFAULT));
  if (!obj.valid()) w.read_error_h5(std::string("cannot open '") + name + "'");
  if (H5Iget_type(obj.get()) != H5I_DATASET) w.read_error(std::string("'") + name + "' is not a dataset");
  return Dataset(obj.release());
}

Type dataset_type(hid_t dataset, const Where& w) {
  Type t(H5Dget_type(dataset));
  if (!t.valid()) w.read_error_h5("cannot read its type");
  return t;
}

std::vector<hsize_t> dataset_dims(hid_t dataset, const Where& w) {
  Space space(H5Dget_space(dataset));
  if (!space.valid()) w.read_error_h5("cannot read its shape");
  const H5S_class_t cls = H5Sget_simple_extent_type(space.get());
  if (cls == H5S_SCALAR) return {};  // rank 0: callers reject it by rank
  if (cls != H5S_SIMPLE) w.read_error("has no shape (null dataspace)");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) w.read_error_h5("cannot read its rank");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0) w.read_error_h5("cannot read its shape");
  return dims;
}

std::string dims_text(const std::vector<hsize_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

void read_raw(hid_t dataset, hid_t mem_type, void* buf, size_t count, const Where& w) {
  if (count == 0) return;
  if (H5Dread(dataset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) w.read_error_h5("cannot read the data");
}

Dataset write_dataset(hid_t loc, const char* name, hid_t file_type, hid_t mem_type, const void* data,
                      const std::vector<hsize_t>& dims, const Where& w) {
  Space space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
  if (!space.valid()) w.write_error_h5("cannot create dataspace " + dims_text(dims));
  size_t count = 1;
  for (hsize_t d : dims) count *= static_cast<size_t>(d);
  const size_t elem = H5Tget_size(file_type);

  Plist dcpl = untimed_create_plist(H5P_DATASET_CREATE, w);
  if (count * elem > kChunkThresholdBytes) {
    // Chunks are whole rows (all trailing dims), as many as fit the target size.
    size_t row_bytes = elem;
    for (size_t i = 1; i < dims.size(); ++i) row_bytes *= static_cast<size_t>(dims[i]);
    std::vector<hsize_t> chunk = dims;
    chunk[0] = std::clamp<hsize_t>(kChunkTargetBytes / row_bytes, 1, dims[0]);
    if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0) w.write_error("this HDF5 library has no deflate filter");
    if (H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()) < 0 ||
        H5Pset_shuffle(dcpl.get()) < 0 || H5Pset_deflate(dcpl.get(), kDeflateLevel) < 0) {
      w.write_error_h5("cannot set up chunking and compression");
    }
  }

  Dataset ds(H5Dcreate2(loc, name, file_type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT));
  if (!ds.valid()) w.write_error_h5(std::string("cannot create dataset '") + name + "'");
  if (count > 0 && H5Dwrite(ds.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    w.write_error_h5(std::string("cannot write dataset '") + name + "'");
  }
  return ds;
}

}  // namespace vattn::h5
