// SPDX-License-Identifier: Apache-2.0
// One test per rule of docs/case-format.md: a valid file is written, one thing in it is
// corrupted with the raw HDF5 C API, and the reader must refuse it naming the file, the case
// and the field. A padded tree node (all-zero mask row) is the one zero diagonal allowed.
#include <hdf5.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "vattn/case/case.h"
#include "vattn/casefile/case_file.h"

namespace {

using vattn::Case;

const std::string kCase = "step000001_layer03";
constexpr int kHeads = 2, kDqk = 24, kDv = 16;

// B=3, P=[5,0,7], T=[4,1,6]: n_q = 11, 12 prefix rows + 2 unreferenced rows, mask 16+1+36 = 53.
Case valid_case(const std::string& name) {
  Case c;
  c.name = name;
  c.num_heads = kHeads;
  c.d_qk = kDqk;
  c.d_v = kDv;
  c.sm_scale = 0.125;
  c.qo_indptr = {0, 4, 5, 11};
  c.kv_indptr = {0, 5, 5, 12};
  c.kv_indices = {13, 2, 7, 0, 4, 11, 3, 9, 1, 12, 6, 8};
  c.kv_slot_ids = {100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113};
  c.draft_parent = {-1, 0, 0, 1, -1, -1, 0, 1, 1, 0, 4};
  c.draft_mask_indptr = {0};
  for (int b = 0; b < 3; ++b) {
    const std::vector<int32_t> par(c.draft_parent.begin() + c.qo_indptr[b],
                                   c.draft_parent.begin() + c.qo_indptr[b + 1]);
    const auto m = vattn::mask_from_parents(par);
    c.draft_mask.insert(c.draft_mask.end(), m.begin(), m.end());
    c.draft_mask_indptr.push_back(c.draft_mask_indptr.back() + static_cast<int64_t>(m.size()));
  }
  for (size_t i = 0; i < size_t{11} * kHeads * kDqk; ++i) c.q.push_back(static_cast<uint16_t>(0x3f80 + i % 97));
  for (size_t i = 0; i < size_t{14} * kDqk; ++i) c.kv_pool.push_back(static_cast<uint16_t>(0xbf00 + i % 89));
  for (size_t i = 0; i < size_t{11} * kDqk; ++i) c.kv_draft.push_back(static_cast<uint16_t>(0x3c00 + i % 83));
  vattn::StoredOutput serving;
  serving.producer = "serving";
  serving.description = "captured";
  serving.out.assign(size_t{11} * kHeads * kDv, 0.5f);
  serving.lse.assign(size_t{11} * kHeads, 1.25f);
  c.outputs = {serving};
  return c;
}

// A directory with one valid case file in it; each test corrupts the file, then reads it.
struct ValidFile {
  std::string dir, path;
  ValidFile() {
    char tmpl[] = "/tmp/vattn_validate_test_XXXXXX";
    const char* made = mkdtemp(tmpl);
    REQUIRE(made != nullptr);
    dir = made;
    path = dir + "/case.h5";
    vattn::CaseFileHeader h;
    h.source = "fixture";
    vattn::write_case_file(path, h, {valid_case(kCase)});
    REQUIRE_NOTHROW(vattn::read_case_file(path));  // the corruption, not the base file, must be what fails
  }
  ~ValidFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

// The file opened read-write for one corruption.
struct RawFile {
  hid_t id;
  explicit RawFile(const std::string& path) : id(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT)) { REQUIRE(id >= 0); }
  ~RawFile() { H5Fclose(id); }
  RawFile(const RawFile&) = delete;
  RawFile& operator=(const RawFile&) = delete;
};

std::string in_case(const std::string& name) { return "/cases/" + kCase + "/" + name; }

void remove_link(const std::string& path, const std::string& link) {
  RawFile f(path);
  REQUIRE(H5Ldelete(f.id, link.c_str(), H5P_DEFAULT) >= 0);
}

// Replaces dataset `link` with one of the given type and shape; bf16_tag adds dtype="bfloat16".
void replace_dataset(const std::string& path, const std::string& link, hid_t file_type, hid_t mem_type,
                     const void* data, const std::vector<hsize_t>& dims) {
  RawFile f(path);
  REQUIRE(H5Ldelete(f.id, link.c_str(), H5P_DEFAULT) >= 0);
  const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t ds = H5Dcreate2(f.id, link.c_str(), file_type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(ds >= 0);
  REQUIRE(H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
  H5Dclose(ds);
  H5Sclose(space);
}

// Rewrites the values of an existing dataset, same shape.
template <class T>
void overwrite(const std::string& path, const std::string& link, hid_t mem_type, const std::vector<T>& values) {
  RawFile f(path);
  const hid_t ds = H5Dopen2(f.id, link.c_str(), H5P_DEFAULT);
  REQUIRE(ds >= 0);
  REQUIRE(H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0);
  H5Dclose(ds);
}

void set_attr(const std::string& path, const std::string& object, const char* name, hid_t file_type, hid_t mem_type,
              const void* value) {
  RawFile f(path);
  if (H5Aexists_by_name(f.id, object.c_str(), name, H5P_DEFAULT) > 0) {
    REQUIRE(H5Adelete_by_name(f.id, object.c_str(), name, H5P_DEFAULT) >= 0);
  }
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a =
      H5Acreate_by_name(f.id, object.c_str(), name, file_type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(a >= 0);
  REQUIRE(H5Awrite(a, mem_type, value) >= 0);
  H5Aclose(a);
  H5Sclose(space);
}

void set_int_attr(const std::string& path, const std::string& object, const char* name, int64_t v) {
  set_attr(path, object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}

void set_double_attr(const std::string& path, const std::string& object, const char* name, double v) {
  set_attr(path, object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}

void set_string_attr(const std::string& path, const std::string& object, const char* name, const std::string& v) {
  const hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  const char* text = v.c_str();
  set_attr(path, object, name, t, t, &text);
  H5Tclose(t);
}

void remove_attr(const std::string& path, const std::string& object, const char* name) {
  RawFile f(path);
  REQUIRE(H5Adelete_by_name(f.id, object.c_str(), name, H5P_DEFAULT) >= 0);
}

// The read must fail with an InputError attributed to this file, case and field.
void expect_refused(const std::string& path, const std::string& case_name, const std::string& field,
                    const std::string& reason_part) {
  const ssize_t open_before = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  try {
    vattn::read_case_file(path);
    FAIL("the corrupted file was accepted");
  } catch (const vattn::InputError& e) {
    const std::string msg = e.what();
    INFO("message: " << msg);
    CHECK(e.file() == path);
    CHECK(e.case_name() == case_name);
    CHECK(e.field() == field);
    CHECK_THAT(e.reason(), Catch::Contains(reason_part));
    CHECK_THAT(msg, Catch::Contains(path));
    if (!case_name.empty()) CHECK_THAT(msg, Catch::Contains("case '" + case_name + "'"));
    CHECK_THAT(msg, Catch::Contains("field '" + field + "'"));
  }
  CHECK(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) == open_before);  // the early exit closed everything
}

}  // namespace

TEST_CASE("validate: another format name is refused", "[validate][h5]") {
  ValidFile v;
  set_string_attr(v.path, "/", "format", "netcdf-things");
  expect_refused(v.path, "", "format", "not a vattn case file");
}

TEST_CASE("validate: an unknown format_version is refused", "[validate][h5]") {
  ValidFile v;
  set_int_attr(v.path, "/", "format_version", 2);
  expect_refused(v.path, "", "format_version", "version 2");
}

TEST_CASE("validate: a missing /cases group is refused", "[validate][h5]") {
  ValidFile v;
  remove_link(v.path, "/cases");
  expect_refused(v.path, "", "cases", "missing group '/cases'");
}

TEST_CASE("validate: a missing dataset is named", "[validate][h5]") {
  ValidFile v;
  remove_link(v.path, in_case("kv_draft"));
  expect_refused(v.path, kCase, "kv_draft", "missing dataset");
}

TEST_CASE("validate: a missing case attribute is named", "[validate][h5]") {
  ValidFile v;
  remove_attr(v.path, "/cases/" + kCase, "num_heads");
  expect_refused(v.path, kCase, "num_heads", "missing attribute");
}

TEST_CASE("validate: bf16 data stored as float32 is refused", "[validate][h5]") {
  ValidFile v;
  const std::vector<float> q(size_t{11} * kHeads * kDqk, 1.0f);
  replace_dataset(v.path, in_case("q"), H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, q.data(), {11, kHeads, kDqk});
  expect_refused(v.path, kCase, "q", "expected uint16 bf16 bits, found float32");
}

TEST_CASE("validate: float data where int32 indices belong is refused", "[validate][h5]") {
  ValidFile v;
  const std::vector<double> idx(12, 1.0);
  replace_dataset(v.path, in_case("kv_indices"), H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, idx.data(), {12});
  expect_refused(v.path, kCase, "kv_indices", "expected int32, found float64");
}

TEST_CASE("validate: bf16 bits without dtype=\"bfloat16\" are refused", "[validate][h5]") {
  ValidFile v;
  remove_attr(v.path, in_case("kv_pool"), "dtype");
  expect_refused(v.path, kCase, "kv_pool", "dtype");
}

TEST_CASE("validate: a dataset of the wrong rank is refused", "[validate][h5]") {
  ValidFile v;
  const Case c = valid_case(kCase);
  replace_dataset(v.path, in_case("kv_pool"), H5T_STD_U16LE, H5T_NATIVE_UINT16, c.kv_pool.data(), {c.kv_pool.size()});
  set_string_attr(v.path, in_case("kv_pool"), "dtype", "bfloat16");
  expect_refused(v.path, kCase, "kv_pool", "has shape [336], expected [n_rows, d_qk=24]");
}

TEST_CASE("validate: an indptr not starting at 0 is refused", "[validate][h5]") {
  ValidFile v;
  overwrite<int32_t>(v.path, in_case("kv_indptr"), H5T_NATIVE_INT32, {1, 5, 5, 12});
  expect_refused(v.path, kCase, "kv_indptr", "must start at 0");
}

TEST_CASE("validate: a decreasing indptr is refused", "[validate][h5]") {
  ValidFile v;
  overwrite<int32_t>(v.path, in_case("qo_indptr"), H5T_NATIVE_INT32, {0, 4, 3, 11});
  expect_refused(v.path, kCase, "qo_indptr", "decreases at position 2");
}

TEST_CASE("validate: a dataset length that disagrees with its indptr is refused", "[validate][h5]") {
  ValidFile v;
  const std::vector<int32_t> idx{13, 2, 7, 0, 4, 11, 3, 9, 1, 12, 6};
  replace_dataset(v.path, in_case("kv_indices"), H5T_STD_I32LE, H5T_NATIVE_INT32, idx.data(), {idx.size()});
  expect_refused(v.path, kCase, "kv_indices", "has 11 elements, expected 12");
}

TEST_CASE("validate: a kv index past the end of kv_pool is refused", "[validate][h5]") {
  ValidFile v;
  overwrite<int32_t>(v.path, in_case("kv_indices"), H5T_NATIVE_INT32, {13, 2, 7, 14, 4, 11, 3, 9, 1, 12, 6, 8});
  expect_refused(v.path, kCase, "kv_indices", "entry 3 = 14 is outside kv_pool (14 rows)");
}

TEST_CASE("validate: a negative kv index is refused", "[validate][h5]") {
  ValidFile v;
  overwrite<int32_t>(v.path, in_case("kv_indices"), H5T_NATIVE_INT32, {-1, 2, 7, 0, 4, 11, 3, 9, 1, 12, 6, 8});
  expect_refused(v.path, kCase, "kv_indices", "entry 0 = -1 is outside kv_pool");
}

TEST_CASE("validate: a negative kv_slot_id is refused", "[validate][h5]") {
  ValidFile v;
  std::vector<int64_t> slots = valid_case(kCase).kv_slot_ids;
  slots[5] = -3;
  overwrite<int64_t>(v.path, in_case("kv_slot_ids"), H5T_NATIVE_INT64, slots);
  expect_refused(v.path, kCase, "kv_slot_ids", "entry 5 is negative");
}

TEST_CASE("validate: a request with T_b = 0 is refused", "[validate][h5]") {
  ValidFile v;
  overwrite<int32_t>(v.path, in_case("qo_indptr"), H5T_NATIVE_INT32, {0, 4, 4, 11});
  expect_refused(v.path, kCase, "qo_indptr", "request 1 has T_b = 0");
}

TEST_CASE("validate: a draft_mask of the wrong size is refused", "[validate][h5]") {
  ValidFile v;
  std::vector<uint8_t> mask = valid_case(kCase).draft_mask;
  mask.push_back(0);
  replace_dataset(v.path, in_case("draft_mask"), H5T_STD_U8LE, H5T_NATIVE_UINT8, mask.data(), {mask.size()});
  expect_refused(v.path, kCase, "draft_mask", "has 54 elements, expected 53");
}

TEST_CASE("validate: a draft_mask_indptr span that is not T_b^2 is refused", "[validate][h5]") {
  ValidFile v;
  overwrite<int64_t>(v.path, in_case("draft_mask_indptr"), H5T_NATIVE_INT64, {0, 16, 18, 53});
  expect_refused(v.path, kCase, "draft_mask_indptr", "request 1 spans 2 mask entries, expected T_b^2 = 1");
}

TEST_CASE("validate: a mask value other than 0/1 is refused", "[validate][h5]") {
  ValidFile v;
  std::vector<uint8_t> mask = valid_case(kCase).draft_mask;
  mask[20] = 2;
  overwrite<uint8_t>(v.path, in_case("draft_mask"), H5T_NATIVE_UINT8, mask);
  expect_refused(v.path, kCase, "draft_mask", "entry 20 = 2");
}

TEST_CASE("validate: a zero diagonal on a row that is not padded is refused", "[validate][h5]") {
  ValidFile v;
  std::vector<uint8_t> mask = valid_case(kCase).draft_mask;
  REQUIRE(mask[1 * 4 + 1] == 1);  // request 0, row 1 (parent 0): sees 0 and itself
  mask[1 * 4 + 1] = 0;
  overwrite<uint8_t>(v.path, in_case("draft_mask"), H5T_NATIVE_UINT8, mask);
  expect_refused(v.path, kCase, "draft_mask", "request 0 row 1 has 0 on its diagonal");
}

TEST_CASE("validate: draft_parent that disagrees with draft_mask is refused", "[validate][h5]") {
  ValidFile v;
  std::vector<int32_t> parent = valid_case(kCase).draft_parent;
  parent[2] = 1;  // request 0 node 2: the mask says parent 0
  overwrite<int32_t>(v.path, in_case("draft_parent"), H5T_NATIVE_INT32, parent);
  expect_refused(v.path, kCase, "draft_parent", "request 0: parents give M[2][1] = 1 but draft_mask has 0");
}

TEST_CASE("validate: num_heads that disagrees with the shape of q is refused", "[validate][h5]") {
  ValidFile v;
  set_int_attr(v.path, "/cases/" + kCase, "num_heads", kHeads + 1);
  expect_refused(v.path, kCase, "q", "has shape [11, 2, 24], expected [n_q, num_heads=3, d_qk=24]");
}

TEST_CASE("validate: a NaN sm_scale is refused", "[validate][h5]") {
  ValidFile v;
  set_double_attr(v.path, "/cases/" + kCase, "sm_scale", std::numeric_limits<double>::quiet_NaN());
  expect_refused(v.path, kCase, "sm_scale", "must be finite and > 0");
}

TEST_CASE("validate: an sm_scale <= 0 is refused", "[validate][h5]") {
  for (const double bad : {0.0, -0.125}) {
    ValidFile v;
    set_double_attr(v.path, "/cases/" + kCase, "sm_scale", bad);
    expect_refused(v.path, kCase, "sm_scale", "must be finite and > 0");
  }
}

TEST_CASE("validate: a stored output of the wrong shape is refused", "[validate][h5]") {
  ValidFile v;
  const std::vector<float> lse(size_t{11} * (kHeads + 1), 0.0f);
  replace_dataset(v.path, in_case("outputs/serving/lse"), H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, lse.data(),
                  {11, kHeads + 1});
  expect_refused(v.path, kCase, "outputs/serving/lse", "has shape [11, 3], expected [n_q=11, num_heads=2]");
}

TEST_CASE("validate: an output or index dataset of a type or byte order the schema rules out is refused",
          "[validate][h5]") {
  const size_t n_out = size_t{11} * kHeads * kDv;
  const std::vector<int32_t> out_i32(n_out, 0), indptr = {0, 5, 5, 12};
  const std::vector<float> out_f32(n_out, 0.5f);
  const std::vector<hsize_t> out_dims = {11, kHeads, kDv};
  struct Row {
    const char* field;
    hid_t file_type, mem_type;
    const void* data;
    std::vector<hsize_t> dims;
    const char* reason;
  };
  const Row rows[] = {
      {"outputs/serving/out", H5T_STD_I32LE, H5T_NATIVE_INT32, out_i32.data(), out_dims,
       "expected uint16 bf16 bits (only oracle_fp64 stores float32), found int32"},
      // out is bf16 for every producer but oracle_fp64 (case-format.md)
      {"outputs/serving/out", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, out_f32.data(), out_dims,
       "expected uint16 bf16 bits (only oracle_fp64 stores float32), found float32"},
      // "All integers little-endian"
      {"kv_indptr", H5T_STD_I32BE, H5T_NATIVE_INT32, indptr.data(), {4}, "found int32 big-endian"},
  };
  for (const Row& r : rows) {
    INFO(r.field << ": " << r.reason);
    ValidFile v;
    replace_dataset(v.path, in_case(r.field), r.file_type, r.mem_type, r.data, r.dims);
    expect_refused(v.path, kCase, r.field, r.reason);
  }
}

TEST_CASE("validate: a big-endian integer attribute is refused", "[validate][h5]") {
  ValidFile v;
  const int64_t heads = kHeads;
  set_attr(v.path, "/cases/" + kCase, "num_heads", H5T_STD_I64BE, H5T_NATIVE_INT64, &heads);
  expect_refused(v.path, kCase, "num_heads", "expected a little-endian integer, found int64 big-endian");
}

TEST_CASE("validate: num_requests that disagrees with qo_indptr is refused", "[validate][h5]") {
  ValidFile v;
  set_int_attr(v.path, "/cases/" + kCase, "num_requests", 4);
  expect_refused(v.path, kCase, "num_requests", "is 4 but qo_indptr has 4 entries");
}

TEST_CASE("validate: a padded tree node (all-zero mask row) is accepted", "[validate][h5]") {
  char tmpl[] = "/tmp/vattn_validate_test_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl, path = dir + "/padded.h5";
  Case c = valid_case("padded");
  // Request 2 (P=7) node 5 and request 1 (P=0, its only node) become padding: rows of zeros.
  c.draft_parent.clear();
  const int64_t row5 = c.draft_mask_indptr[2] + 5 * 6;
  for (int j = 0; j < 6; ++j) c.draft_mask[static_cast<size_t>(row5 + j)] = 0;
  c.draft_mask[static_cast<size_t>(c.draft_mask_indptr[1])] = 0;
  vattn::CaseFileHeader h;
  h.source = "fixture";
  vattn::write_case_file(path, h, {c});
  vattn::CaseFile f;
  REQUIRE_NOTHROW(f = vattn::read_case_file(path));
  REQUIRE(f.cases.size() == 1);
  CHECK(f.cases[0].draft_mask == c.draft_mask);
  CHECK_FALSE(f.cases[0].visible(2, 5, 5));
  CHECK_FALSE(f.cases[0].visible(1, 0, 0));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

TEST_CASE("validate: validate_cases=false hands back a malformed case untouched", "[validate][h5]") {
  ValidFile v;
  std::vector<uint8_t> mask = valid_case(kCase).draft_mask;
  mask[20] = 2;
  overwrite<uint8_t>(v.path, in_case("draft_mask"), H5T_NATIVE_UINT8, mask);
  const vattn::CaseFile f = vattn::read_case_file(v.path, "", false);
  REQUIRE(f.cases.size() == 1);
  CHECK(f.cases[0].draft_mask == mask);
  CHECK_THROWS_AS(vattn::validate(f.cases[0]), vattn::InputError);
}

TEST_CASE("an InputError escapes control bytes and broken UTF-8 read from a damaged file", "[validate]") {
  const vattn::InputError e("f.h5", std::string("c\x01se"), "dtype",
                            std::string("is '\x0b"
                                        "float16\xff', \xc3\xa9 kept"));
  const std::string what = e.what();
  CHECK(what == "f.h5: case 'c\\x01se': field 'dtype': is '\\x0bfloat16\\xff', \xc3\xa9 kept");
  // Lead bytes that start no UTF-8 sequence (0xf5..0xff, 0x80..0xc1) are escaped with what follows them.
  CHECK(std::string(vattn::InputError("", "", "", "\xff\x80\x80 \xf8\x88\x80\x80\x80").what()) ==
        "\\xff\\x80\\x80 \\xf8\\x88\\x80\\x80\\x80");
}
