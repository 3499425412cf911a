// SPDX-License-Identifier: Apache-2.0
// Case-file reader (docs/case-format.md, v1). Structure is checked here, as it is read:
// presence, element types, ranks and the dims fixed by attributes (H, d_qk, d_v) or by other
// datasets (n_q from q, n_rows from kv_pool). Values and cross-lengths are validate()'s job.
#include "vattn/casefile/case_file.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <system_error>

#include "vattn/case/bf16.h"
#include "vattn/case/memory_limit.h"
#include "vattn/casefile/h5_attr.h"
#include "vattn/casefile/h5_case_io.h"
#include "vattn/casefile/h5_dataset.h"
#include "vattn/casefile/h5_group.h"
#include "vattn/casefile/h5_types.h"
#include "vattn/casefile/read_watchdog.h"
#include "vattn/recipe/recipe.h"

namespace vattn {

namespace h5 {

File open_case_file(const std::string& path, bool writable) {
  silence_library_errors();
  const Where w{path, "", ""};
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) w.read_error("file does not exist");
  if (!std::filesystem::is_regular_file(status)) w.read_error("is not a regular file");
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 < 0) w.read_error_h5("cannot check whether it is an HDF5 file");
  if (is_hdf5 == 0) w.read_error("not an HDF5 file (no HDF5 signature found)");
  File f(H5Fopen(path.c_str(), writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!f.valid()) w.read_error_h5(writable ? "cannot open the HDF5 file for writing" : "cannot open the HDF5 file");
  return f;
}

CaseFileHeader read_header(hid_t file, const std::string& path) {
  const Where w{path, "", ""};
  if (!has_attr(file, "format", w.at("format"))) {
    w.at("format").read_error("missing root attribute 'format': not a vattn case file");
  }
  const std::string format = read_string_attr(file, "format", w.at("format"));
  if (format != kCaseFormatName) {
    w.at("format").read_error("is '" + format + "', expected '" + kCaseFormatName + "': not a vattn case file");
  }
  CaseFileHeader h;
  const int64_t version = read_int_attr(file, "format_version", w.at("format_version"));
  if (version != kCaseFormatVersion) {
    w.at("format_version")
        .read_error("version " + std::to_string(version) + " is not known to this reader (it reads " +
                    std::to_string(kCaseFormatVersion) + "); a newer vattn may read it");
  }
  h.format_version = static_cast<int>(version);
  h.source = read_string_attr(file, "source", w.at("source"));
  h.created = read_string_attr(file, "created", w.at("created"));
  h.generator = read_string_attr(file, "generator", w.at("generator"));
  for (const char* key : kOptionalHeaderKeys) {
    if (has_attr(file, key, w.at(key))) h.optional[key] = read_string_attr(file, key, w.at(key));
  }
  return h;
}

}  // namespace h5

namespace {

using h5::Where;

// Element kinds of the schema: the on-disk type each must have and the memory type read into.
enum class Elem { kBf16, kUint8, kInt32, kInt64, kFloat32 };

const char* expected_text(Elem e) {
  switch (e) {
    case Elem::kBf16: return "uint16 bf16 bits";
    case Elem::kUint8: return "uint8";
    case Elem::kInt32: return "int32";
    case Elem::kInt64: return "int64";
    case Elem::kFloat32: return "float32";
  }
  return "?";
}

bool file_type_fits(hid_t t, Elem e) {
  switch (e) {
    case Elem::kBf16: return h5::is_integer(t, 2, false);
    case Elem::kUint8: return h5::is_integer(t, 1, false);
    case Elem::kInt32: return h5::is_integer(t, 4, true);
    case Elem::kInt64: return h5::is_integer(t, 8, true);
    case Elem::kFloat32: return h5::is_float(t, 4);
  }
  return false;
}

hid_t memory_type(Elem e) {
  switch (e) {
    case Elem::kBf16: return H5T_NATIVE_UINT16;
    case Elem::kUint8: return H5T_NATIVE_UINT8;
    case Elem::kInt32: return H5T_NATIVE_INT32;
    case Elem::kInt64: return H5T_NATIVE_INT64;
    case Elem::kFloat32: return H5T_NATIVE_FLOAT;
  }
  return H5I_INVALID_HID;
}

// One expected dimension: a fixed size (>= 0) or any size (-1), named for messages.
struct Dim {
  int64_t size;
  const char* name;
};

void check_shape(const std::vector<hsize_t>& dims, std::initializer_list<Dim> want, const Where& w) {
  bool ok = dims.size() == want.size();
  std::string expected = "[";
  size_t i = 0;
  for (const Dim& d : want) {
    expected += (i ? ", " : "") + std::string(d.name);
    if (d.size >= 0) expected += "=" + std::to_string(d.size);
    if (ok && d.size >= 0 && dims[i] != static_cast<hsize_t>(d.size)) ok = false;
    ++i;
  }
  if (!ok) w.read_error("has shape " + h5::dims_text(dims) + ", expected " + expected + "]");
}

// bf16 travels as uint16; the attribute is what tells a reader the bits are not integers.
void check_bf16_marker(hid_t dataset, const Where& w) {
  if (!h5::has_attr(dataset, "dtype", w))
    w.read_error("uint16 bf16 bits need attribute dtype=\"bfloat16\"; it is missing");
  const std::string tag = h5::read_string_attr(dataset, "dtype", w);
  if (tag != "bfloat16") w.read_error("attribute dtype is '" + tag + "', expected 'bfloat16'");
}

h5::Dataset open_typed(hid_t loc, const char* name, Elem e, std::initializer_list<Dim> shape, const Where& w,
                       std::vector<hsize_t>* dims_out) {
  h5::Dataset ds = h5::open_dataset(loc, name, w);
  const h5::Type type = h5::dataset_type(ds.get(), w);
  if (!file_type_fits(type.get(), e)) {
    w.read_error(std::string("expected ") + expected_text(e) + ", found " + h5::type_name(type.get()));
  }
  if (e == Elem::kBf16) check_bf16_marker(ds.get(), w);
  const std::vector<hsize_t> dims = h5::dataset_dims(ds.get(), w);
  check_shape(dims, shape, w);
  if (dims_out != nullptr) *dims_out = dims;
  return ds;
}

// Reads dataset `name` of `loc`, reported as `field`, after checking its type and shape.
template <class T>
std::vector<T> read_array(hid_t loc, const char* name, const std::string& field, Elem e,
                          std::initializer_list<Dim> shape, const Where& where, std::vector<hsize_t>* dims = nullptr) {
  const Where w = where.at(field);
  const h5::Dataset ds = open_typed(loc, name, e, shape, w, dims);
  return h5::read_dataset<T>(ds.get(), memory_type(e), w);
}

// The last entry of an index-pointer array that starts at 0 and never decreases, else -1 (then
// validate() reports the array itself).
int64_t indptr_total(const std::vector<int32_t>& v) {
  if (v.empty() || v[0] != 0) return -1;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] < v[i - 1]) return -1;
  return v.back();
}

// A dataset whose length the index arrays already read fix (want >= 0) is measured before it is
// read: a small corrupt file must not make the reader allocate what its dataspace claims. Only a
// claim far beyond the expected length (over twice it plus 2^20 entries) is refused here, with the
// message validate() gives for a wrong length; anything closer is read, so that the checks after
// reading (shape, T_b, num_heads) can say more precisely what is wrong.
// `want` is a long double so that a product of attributes (n_q x num_heads x d_qk) cannot wrap.
void expect_elements(hid_t loc, const char* name, long double want, const char* shape, const Where& where) {
  if (want < 0 || !h5::has_link(loc, name, where.at(name))) return;  // a missing dataset: read_array says so
  const Where w = where.at(name);
  const h5::Dataset ds = h5::open_dataset(loc, name, w);
  long double have = 1;  // no overflow whatever the dataspace claims
  for (const hsize_t d : h5::dataset_dims(ds.get(), w)) have *= static_cast<long double>(d);
  if (have > 2.0L * want + static_cast<long double>(1 << 20)) {
    w.read_error("has " + std::to_string(static_cast<unsigned long long>(have)) + " elements, expected " +
                 std::to_string(static_cast<unsigned long long>(want)) + " (" + shape + ")");
  }
}

// The first dim of dataset `name` (0 when it is missing: read_array reports that later).
int64_t leading_dim(hid_t loc, const char* name, const Where& where) {
  if (!h5::has_link(loc, name, where.at(name))) return 0;
  const h5::Dataset ds = h5::open_dataset(loc, name, where.at(name));
  const auto dims = h5::dataset_dims(ds.get(), where.at(name));
  return dims.empty() ? 0 : static_cast<int64_t>(std::min<hsize_t>(dims[0], hsize_t{1} << 40));
}

// Refuses a case whose shapes need more memory than the limit, before its tensors are read:
// a 19 KB file may declare a pool of millions of rows.
void check_case_memory(hid_t gid, const Case& c, int64_t mask_total, const Where& w) {
  const int64_t n_rows = leading_dim(gid, "kv_pool", w), n_q = leading_dim(gid, "q", w);
  int64_t outputs = 0;
  if (h5::has_link(gid, "outputs", w.at("outputs"))) {
    const h5::Group g = h5::open_group(gid, "outputs", "group 'outputs'", w.at("outputs"));
    outputs = static_cast<int64_t>(h5::member_names(g.get(), w.at("outputs")).size());
  }
  const int64_t keys = std::max<int64_t>(0, indptr_total(c.kv_indptr));
  const uint64_t need =
      case_memory_estimate(n_q, c.num_heads, c.d_qk, c.d_v, n_rows, keys, std::max<int64_t>(0, mask_total), outputs);
  if (const std::string why = case_memory_problem(need, "read and checked"); !why.empty()) w.read_error(why);
}

int read_int_dim(hid_t group, const char* name, const Where& where) {
  const Where w = where.at(name);
  const int64_t v = h5::read_int_attr(group, name, w);
  if (v < INT_MIN || v > INT_MAX) w.read_error("value " + std::to_string(v) + " is out of range");
  return static_cast<int>(v);
}

// out is float32 for oracle_fp64 and bf16 bits for every other producer (case-format.md).
void read_out(hid_t group, const std::string& field, const Case& c, int64_t n_q, StoredOutput& o, const Where& where) {
  const Where w = where.at(field);
  const h5::Dataset ds = h5::open_dataset(group, "out", w);
  const h5::Type type = h5::dataset_type(ds.get(), w);
  check_shape(h5::dataset_dims(ds.get(), w), {{n_q, "n_q"}, {c.num_heads, "num_heads"}, {c.d_v, "d_v"}}, w);
  const bool is_oracle = o.producer == kOracleProducer;
  if (is_oracle && !file_type_fits(type.get(), Elem::kFloat32))
    w.read_error(std::string("expected float32 (") + kOracleProducer + " stores out as float32), found " +
                 h5::type_name(type.get()));
  if (!is_oracle && !file_type_fits(type.get(), Elem::kBf16))
    w.read_error(std::string("expected uint16 bf16 bits (only ") + kOracleProducer + " stores float32), found " +
                 h5::type_name(type.get()));
  if (file_type_fits(type.get(), Elem::kBf16)) {
    check_bf16_marker(ds.get(), w);
    const auto bits = h5::read_dataset<uint16_t>(ds.get(), H5T_NATIVE_UINT16, w);
    o.out.resize(bits.size());
    for (size_t i = 0; i < bits.size(); ++i) o.out[i] = bf16_to_float(bits[i]);
    o.out_is_bf16 = true;
  } else {
    o.out = h5::read_dataset<float>(ds.get(), H5T_NATIVE_FLOAT, w);
    o.out_is_bf16 = false;
  }
}

void read_outputs(hid_t case_group, Case& c, int64_t n_q, const Where& where) {
  const Where w = where.at("outputs");
  if (!h5::has_link(case_group, "outputs", w)) return;
  const h5::Group outputs = h5::open_group(case_group, "outputs", "group 'outputs'", w);
  for (const std::string& producer : h5::member_names(outputs.get(), w)) {
    const std::string base = "outputs/" + producer;
    const h5::Group g = h5::open_group(outputs.get(), producer.c_str(), "'" + base + "'", where.at(base));
    StoredOutput o;
    o.producer = producer;
    o.description = h5::read_string_attr(g.get(), "description", where.at(base));
    read_out(g.get(), base + "/out", c, n_q, o, where);
    // lse is optional for a producer that does not report it (oracle_fp64 always stores it).
    o.lse_stored = producer == kOracleProducer || h5::has_link(g.get(), "lse", where.at(base + "/lse"));
    if (o.lse_stored)
      o.lse = read_array<float>(g.get(), "lse", base + "/lse", Elem::kFloat32,
                                {{n_q, "n_q"}, {c.num_heads, "num_heads"}}, where);
    c.outputs.push_back(std::move(o));
  }
}

Case read_case(hid_t cases, const std::string& name, const std::string& path) {
  const Where w{path, name, ""};
  const h5::Group g = h5::open_group(cases, name.c_str(), "case group", w);
  Case c;
  c.name = name;
  c.num_heads = read_int_dim(g.get(), "num_heads", w);
  c.d_qk = read_int_dim(g.get(), "d_qk", w);
  c.d_v = read_int_dim(g.get(), "d_v", w);
  c.sm_scale = h5::read_float_attr(g.get(), "sm_scale", w.at("sm_scale"));
  const int64_t num_requests = h5::read_int_attr(g.get(), "num_requests", w.at("num_requests"));
  if (h5::has_attr(g.get(), "recipe", w.at("recipe")))
    c.recipe = h5::read_string_attr(g.get(), "recipe", w.at("recipe"));
  for (const char* key : h5::kCaseIntAttrKeys) {
    if (h5::has_attr(g.get(), key, w.at(key))) c.int_attrs[key] = h5::read_int_attr(g.get(), key, w.at(key));
  }

  // B is an int (Case::num_requests); in range, it bounds the three index-pointer arrays before
  // they are read, as the index arrays bound what follows them.
  if (num_requests < 0 || num_requests >= INT_MAX) {
    w.at("num_requests")
        .read_error("value " + std::to_string(num_requests) + " is out of range (0 to " + std::to_string(INT_MAX - 1) +
                    ")");
  }
  const auto pointers = static_cast<long double>(num_requests + 1);

  const hid_t gid = g.get();
  expect_elements(gid, "qo_indptr", pointers, "num_requests+1", w);
  c.qo_indptr = read_array<int32_t>(gid, "qo_indptr", "qo_indptr", Elem::kInt32, {{-1, "num_requests+1"}}, w);
  if (static_cast<int64_t>(c.qo_indptr.size()) != num_requests + 1) {
    w.at("num_requests")
        .read_error("is " + std::to_string(num_requests) + " but qo_indptr has " + std::to_string(c.qo_indptr.size()) +
                    " entries (num_requests+1 expected)");
  }
  expect_elements(gid, "kv_indptr", pointers, "num_requests+1", w);
  c.kv_indptr = read_array<int32_t>(gid, "kv_indptr", "kv_indptr", Elem::kInt32, {{-1, "num_requests+1"}}, w);
  expect_elements(gid, "kv_indices", static_cast<long double>(indptr_total(c.kv_indptr)), "kv_indptr[B]", w);
  c.kv_indices = read_array<int32_t>(gid, "kv_indices", "kv_indices", Elem::kInt32, {{-1, "kv_indptr[B]"}}, w);
  expect_elements(gid, "draft_mask_indptr", pointers, "num_requests+1", w);
  c.draft_mask_indptr =
      read_array<int64_t>(gid, "draft_mask_indptr", "draft_mask_indptr", Elem::kInt64, {{-1, "num_requests+1"}}, w);
  int64_t mask_total = indptr_total(c.qo_indptr) >= 0 ? 0 : -1;
  for (size_t b = 0; mask_total >= 0 && b + 1 < c.qo_indptr.size(); ++b) {
    const int64_t t = c.qo_indptr[b + 1] - c.qo_indptr[b];
    mask_total += t * t;
  }
  check_case_memory(gid, c, mask_total, w);  // from the dataspaces: before anything large is read
  expect_elements(gid, "draft_mask", static_cast<long double>(mask_total), "sum of T_b^2", w);
  c.draft_mask = read_array<uint8_t>(gid, "draft_mask", "draft_mask", Elem::kUint8, {{-1, "sum of T_b^2"}}, w);

  std::vector<hsize_t> dims;
  c.kv_pool =
      read_array<uint16_t>(gid, "kv_pool", "kv_pool", Elem::kBf16, {{-1, "n_rows"}, {c.d_qk, "d_qk"}}, w, &dims);
  const auto n_rows = static_cast<int64_t>(dims[0]);
  if (h5::has_link(gid, "kv_slot_ids", w.at("kv_slot_ids"))) {
    c.kv_slot_ids = read_array<int64_t>(gid, "kv_slot_ids", "kv_slot_ids", Elem::kInt64, {{n_rows, "n_rows"}}, w);
  }
  const int64_t n_q_want = indptr_total(c.qo_indptr);
  expect_elements(
      gid, "q",
      n_q_want < 0 ? -1.0L : static_cast<long double>(n_q_want) * c.num_heads * static_cast<long double>(c.d_qk),
      "n_q x num_heads x d_qk", w);
  c.q = read_array<uint16_t>(gid, "q", "q", Elem::kBf16, {{-1, "n_q"}, {c.num_heads, "num_heads"}, {c.d_qk, "d_qk"}}, w,
                             &dims);
  const auto n_q = static_cast<int64_t>(dims[0]);
  c.kv_draft = read_array<uint16_t>(gid, "kv_draft", "kv_draft", Elem::kBf16, {{n_q, "n_q"}, {c.d_qk, "d_qk"}}, w);
  if (h5::has_link(gid, "draft_parent", w.at("draft_parent"))) {
    c.draft_parent = read_array<int32_t>(gid, "draft_parent", "draft_parent", Elem::kInt32, {{n_q, "n_q"}}, w);
  }
  read_outputs(gid, c, n_q, w);
  return c;
}

std::vector<std::string> case_names(hid_t file, const std::string& path) {
  const Where w{path, "", "cases"};
  const h5::Group cases = h5::open_group(file, "cases", "group '/cases'", w);
  std::vector<std::string> names = h5::member_names(cases.get(), w);
  for (const std::string& n : names) {
    if (h5::member_kind(cases.get(), n.c_str(), w) != H5I_GROUP) {
      Where{path, n, ""}.read_error("'/cases/" + n + "' is not a group (every member of /cases is a case)");
    }
  }
  return names;
}

}  // namespace

struct CaseFileCursor::Impl {
  std::string path;
  h5::File file;
  h5::Group cases;
  CaseFileHeader header;
  std::vector<std::string> names;
};

CaseFileCursor::CaseFileCursor(const std::string& path) : impl_(new Impl) {
  try {
    impl_->path = path;
    impl_->file = h5::open_case_file(path, false);
    impl_->header = h5::read_header(impl_->file.get(), path);
    impl_->names = case_names(impl_->file.get(), path);
    impl_->cases = h5::open_group(impl_->file.get(), "cases", "group '/cases'", Where{path, "", "cases"});
  } catch (...) {
    delete impl_;
    throw;
  }
}

CaseFileCursor::~CaseFileCursor() { delete impl_; }
const CaseFileHeader& CaseFileCursor::header() const { return impl_->header; }
const std::vector<std::string>& CaseFileCursor::names() const { return impl_->names; }

namespace {

// validate() and, after it (the index arrays the recipe is compared with are then sound), the
// recipe check; InputError naming the file.
void check_case(const Case& c, const std::string& path) {
  try {
    validate(c);
  } catch (const InputError& e) {
    throw e.in_file(path);
  }
  if (const std::string why = recipe_mismatch(c); !why.empty()) throw InputError(path, c.name, "recipe", why);
}

}  // namespace

Case CaseFileCursor::read(const std::string& name, bool validate_case) const {
  Case c = read_case(impl_->cases.get(), name, impl_->path);
  if (validate_case) check_case(c, impl_->path);
  return c;
}

void require_case(const std::vector<std::string>& names, const std::string& name, const std::string& path) {
  if (std::find(names.begin(), names.end(), name) != names.end()) return;
  std::string known;  // name the cases there are, the first few of them
  for (size_t i = 0; i < names.size() && i < 8; ++i) known += (i ? ", " : "") + names[i];
  if (names.size() > 8) known += ", ... (" + std::to_string(names.size()) + " in all)";
  throw InputError(
      path, name, "",
      "no such case under /cases (" + (names.empty() ? std::string("the file has no cases") : "cases: " + known) + ")");
}

std::vector<std::string> list_cases(const std::string& path) {
  const ReadWatchdog watchdog(path);  // a corrupt file can make HDF5 loop; declared first, so closing is watched too
  const h5::File file = h5::open_case_file(path, false);
  h5::read_header(file.get(), path);
  return case_names(file.get(), path);
}

CaseFile read_case_file(const std::string& path, const std::string& only_case, bool validate_cases) {
  ReadWatchdog watchdog(path);  // a corrupt file can make HDF5 loop; declared first, so closing is watched too
  const h5::File file = h5::open_case_file(path, false);
  CaseFile out;
  out.path = path;
  out.header = h5::read_header(file.get(), path);
  std::vector<std::string> names = case_names(file.get(), path);
  if (!only_case.empty()) {
    require_case(names, only_case, path);
    // Only the chosen case is kept, but with validation every case is read and checked: a file
    // that fails validation is never replayed half-way (case-format.md), even one case of it.
    if (!validate_cases) names = {only_case};
  }
  const h5::Group cases = h5::open_group(file.get(), "cases", "group '/cases'", Where{path, "", "cases"});
  for (const std::string& name : names) {
    watchdog.restart();  // each case gets the full timeout: long healthy files are not cut off
    Case c = read_case(cases.get(), name, path);
    if (validate_cases) check_case(c, path);
    if (only_case.empty() || name == only_case) out.cases.push_back(std::move(c));
  }
  return out;
}

}  // namespace vattn
