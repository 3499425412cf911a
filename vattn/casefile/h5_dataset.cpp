// SPDX-License-Identifier: Apache-2.0
#include "vattn/casefile/h5_dataset.h"

#include <algorithm>

#include "vattn/casefile/h5_types.h"

namespace vattn::h5 {

// Timestamps make every write of the same data differ; goldens must not churn in git.
Plist untimed_create_plist(hid_t plist_class, const Where& w) {
  Plist p(H5Pcreate(plist_class));
  if (!p.valid() || H5Pset_obj_track_times(p.get(), false) < 0) w.write_error_h5("cannot create a property list");
  return p;
}

bool has_link(hid_t loc, const char* name, const Where& w) {
  const htri_t exists = H5Lexists(loc, name, H5P_DEFAULT);
  if (exists < 0) w.read_error_h5(std::string("cannot look up '") + name + "'");
  if (exists > 0) require_hard_link(loc, name, w);
  return exists > 0;
}

void require_hard_link(hid_t loc, const char* name, const Where& w) {
  H5L_info_t info{};
  if (H5Lget_info(loc, name, &info, H5P_DEFAULT) < 0) w.read_error_h5(std::string("cannot look up '") + name + "'");
  if (info.type == H5L_TYPE_HARD) return;
  const std::string what = info.type == H5L_TYPE_EXTERNAL ? "an external link (to an object in another file)"
                           : info.type == H5L_TYPE_SOFT
                               ? "a soft link (a path that may lead anywhere, other files included)"
                               : "a user-defined link";
  w.read_error("'" + std::string(name) + "' is " + what +
               ": a case file must hold its objects itself (hard links only); vattn follows nothing out of the file");
}

namespace {

// A filter's name for messages: the registered ones people meet in case files.
std::string filter_name(H5Z_filter_t id, const char* stored) {
  switch (id) {
    case H5Z_FILTER_DEFLATE: return "deflate (gzip)";
    case H5Z_FILTER_SHUFFLE: return "shuffle";
    case H5Z_FILTER_FLETCHER32: return "fletcher32";
    case H5Z_FILTER_SZIP: return "szip";
    case H5Z_FILTER_NBIT: return "nbit";
    case H5Z_FILTER_SCALEOFFSET: return "scaleoffset";
    case 32000: return "lzf";
    case 32001: return "blosc";
    case 32004: return "lz4";
    case 32008: return "bitshuffle";
    case 32015: return "zstd";
    default: return stored != nullptr && *stored ? stored : "unregistered";
  }
}

}  // namespace

void require_storage_inside(hid_t dataset, const char* name, const Where& w) {
  Plist dcpl(H5Dget_create_plist(dataset));
  if (!dcpl.valid()) w.read_error_h5(std::string("cannot read how '") + name + "' is stored");
  const H5D_layout_t layout = H5Pget_layout(dcpl.get());
  if (layout == H5D_VIRTUAL) {
    w.read_error("'" + std::string(name) +
                 "' is a virtual dataset (its data is mapped from other datasets, other files "
                 "included): vattn reads only data stored in the case file; rewrite it as a plain dataset");
  }
  if (layout < 0) w.read_error_h5(std::string("cannot read the layout of '") + name + "'");
  const int external = H5Pget_external_count(dcpl.get());
  if (external != 0) {
    w.read_error("'" + std::string(name) + "' keeps its raw data in external file(s) (" +
                 std::to_string(external < 0 ? 0 : external) +
                 "): vattn reads only data stored in the case file; rewrite it as a plain dataset");
  }
  const int nfilters = H5Pget_nfilters(dcpl.get());
  for (int i = 0; i < nfilters; ++i) {
    unsigned flags = 0, config = 0;
    size_t nvalues = 0;
    char stored[64] = {0};
    const H5Z_filter_t id =
        H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &nvalues, nullptr, sizeof stored, stored, &config);
    if (id < 0) w.read_error_h5(std::string("cannot read the filters of '") + name + "'");
    if (H5Zfilter_avail(id) <= 0) {
      w.read_error("'" + std::string(name) + "' is compressed with filter " + std::to_string(id) + " (" +
                   filter_name(id, stored) +
                   "), which this HDF5 library does not have: rewrite the file with gzip, "
                   "e.g. h5repack -f GZIP=4 in.h5 out.h5, or in h5py compression='gzip'");
    }
  }
}

Dataset open_dataset(hid_t loc, const char* name, const Where& w) {
  if (!has_link(loc, name, w)) w.read_error(std::string("missing dataset '") + name + "'");
  Object obj(H5Oopen(loc, name, H5P_DEFAULT));
  if (!obj.valid()) w.read_error_h5(std::string("cannot open '") + name + "'");
  if (H5Iget_type(obj.get()) != H5I_DATASET) w.read_error(std::string("'") + name + "' is not a dataset");
  require_storage_inside(obj.get(), name, w);  // from its metadata, before any of its data is read
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

void require_written(hid_t dataset, size_t count, const Where& w) {
  if (count == 0) return;
  // H5Dget_space_status cannot tell (it calls every compressed dataset partly allocated): count
  // the chunks that exist against those the shape needs, or the bytes of a contiguous one.
  Plist dcpl(H5Dget_create_plist(dataset));
  if (!dcpl.valid()) w.read_error_h5("cannot read how it is stored");
  const std::string never = " elements are HDF5 fill values, never written): a case file must hold what it declares";
  if (H5Pget_layout(dcpl.get()) != H5D_CHUNKED) {
    if (H5Dget_storage_size(dataset) == 0) w.read_error("stores no data (its " + std::to_string(count) + never);
    return;
  }
  const std::vector<hsize_t> dims = dataset_dims(dataset, w);
  std::vector<hsize_t> chunk(dims.size());
  if (H5Pget_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()) != static_cast<int>(dims.size()))
    w.read_error_h5("cannot read its chunk shape");
  long double need = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    const hsize_t along = (dims[i] + chunk[i] - 1) / std::max<hsize_t>(chunk[i], 1);  // chunks along i, rounded up
    need *= static_cast<long double>(along);
  }
  hsize_t have = 0;
  Space space(H5Dget_space(dataset));
  if (!space.valid() || H5Dget_num_chunks(dataset, space.get(), &have) < 0) w.read_error_h5("cannot count its chunks");
  if (static_cast<long double>(have) < need) {
    w.read_error("stores " + std::to_string(have) + " of the " + std::to_string(static_cast<unsigned long long>(need)) +
                 " chunks its shape needs (the others'" + never);
  }
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
    if (H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()) < 0 || H5Pset_shuffle(dcpl.get()) < 0 ||
        H5Pset_deflate(dcpl.get(), kDeflateLevel) < 0) {
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
