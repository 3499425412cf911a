// SPDX-License-Identifier: Apache-2.0
// Case files: a hand-built case survives write + read bit for bit; large datasets are chunked
// and compressed; outputs can be added and replaced; the writer refuses what the reader would.
#include <hdf5.h>
#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <regex>
#include <string>
#include <vector>
#include "tests/cpu/temp_dir.h"

#include "vattn/case/bf16.h"
#include "vattn/case/case.h"
#include "vattn/casefile/case_file.h"
#include "vattn/gen/generate.h"

namespace {

using vattn::Case;
using vattn::StoredOutput;

using vattn::test::TempDir;

// bf16 bits from every corner of the encoding (NaN payloads, infinities, denormals, -0).
std::vector<uint16_t> random_bits(size_t n, std::mt19937& rng) {
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = static_cast<uint16_t>(rng() & 0xffffu);
  return v;
}

// Floats that are exact bf16 values (stored as bf16 they must come back identical), NaN canonical.
std::vector<float> bf16_valued_floats(size_t n, std::mt19937& rng) {
  std::vector<float> v(n);
  for (auto& x : v) {
    const auto bits = static_cast<uint16_t>(rng() & 0xffffu);
    const bool nan = (bits & 0x7f80u) == 0x7f80u && (bits & 0x7fu) != 0;
    x = vattn::bf16_to_float(nan ? vattn::kBf16QuietNaN : bits);
  }
  return v;
}

std::vector<float> random_floats(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-30.f, 30.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// B requests with the given prefix lengths and trees (parent links per request); the pool
// holds every referenced row plus `spare` unreferenced ones, in scrambled order.
Case build_case(const std::string& name, int heads, int d_qk, int d_v, const std::vector<int>& prefix,
                const std::vector<std::vector<int32_t>>& trees, int spare, uint32_t seed) {
  std::mt19937 rng(seed);
  Case c;
  c.name = name;
  c.num_heads = heads;
  c.d_qk = d_qk;
  c.d_v = d_v;
  c.sm_scale = 0.1446796;
  c.kv_indptr = {0};
  c.qo_indptr = {0};
  c.draft_mask_indptr = {0};
  int total_prefix = 0;
  for (size_t b = 0; b < prefix.size(); ++b) {
    total_prefix += prefix[b];
    c.kv_indptr.push_back(total_prefix);
    const auto t = static_cast<int32_t>(trees[b].size());
    c.qo_indptr.push_back(c.qo_indptr.back() + t);
    c.draft_mask_indptr.push_back(c.draft_mask_indptr.back() + int64_t{t} * t);
    const auto m = vattn::mask_from_parents(trees[b]);
    c.draft_mask.insert(c.draft_mask.end(), m.begin(), m.end());
    c.draft_parent.insert(c.draft_parent.end(), trees[b].begin(), trees[b].end());
  }
  const int rows = total_prefix + spare;
  std::vector<int32_t> perm(static_cast<size_t>(rows));
  for (int i = 0; i < rows; ++i) perm[static_cast<size_t>(i)] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  c.kv_indices.assign(perm.begin(), perm.begin() + total_prefix);
  for (int i = 0; i < rows; ++i) c.kv_slot_ids.push_back((int64_t{1} << 20) + int64_t{i} * 7919);
  const auto n_q = static_cast<size_t>(c.n_q());
  c.q = random_bits(n_q * static_cast<size_t>(heads * d_qk), rng);
  c.kv_pool = random_bits(static_cast<size_t>(rows) * static_cast<size_t>(d_qk), rng);
  c.kv_draft = random_bits(n_q * static_cast<size_t>(d_qk), rng);
  return c;
}

Case nontrivial_case(const std::string& name, uint32_t seed) {
  Case c = build_case(name, 3, 40, 32, {5, 0, 7}, {{-1, 0, 0, 1}, {-1}, {-1, 0, 1, 1, 0, 4}}, 3, seed);
  // No recipe: a recipe line must re-create its case (recipe_mismatch), and no recipe makes a
  // d_qk=32 case. The recipe's own round trip is tested on a generated case below.
  c.int_attrs = {{"layer", 7}, {"step", 120}, {"tp_rank", 3}};
  std::mt19937 rng(seed + 1);
  const auto n_q = static_cast<size_t>(c.n_q());
  StoredOutput serving{"serving", "what the server returned", bf16_valued_floats(n_q * 3 * 32, rng), true,
                       random_floats(n_q * 3, rng)};
  serving.lse[1] = -std::numeric_limits<float>::infinity();
  serving.lse[2] = std::numeric_limits<float>::quiet_NaN();
  StoredOutput oracle{"oracle_fp64", "float64 oracle, rounded to float32", random_floats(n_q * 3 * 32, rng), false,
                      random_floats(n_q * 3, rng)};
  c.outputs = {oracle, serving};  // name order, as the reader returns them
  return c;
}

vattn::CaseFileHeader test_header() {
  vattn::CaseFileHeader h;
  h.source = "fixture";
  h.created = "2025-01-02T03:04:05Z";
  h.generator = "test_case_h5";
  h.optional = {{"model", "Kimi-K2.6"}, {"notes", "hand-built; ünïcode kept"}};
  return h;
}

// The bit pattern of a double: equal patterns mean equal bits, NaN payloads and -0.0 included.
uint64_t bits_of(double x) {
  static_assert(sizeof(uint64_t) == sizeof(double), "double is 64 bits");
  uint64_t u = 0;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

void require_same_case(const Case& got, const Case& want) {
  CHECK(got.name == want.name);
  CHECK(got.recipe == want.recipe);
  CHECK(got.num_heads == want.num_heads);
  CHECK(got.d_qk == want.d_qk);
  CHECK(got.d_v == want.d_v);
  CHECK(bits_of(got.sm_scale) == bits_of(want.sm_scale));
  CHECK(same_bits(got.q, want.q));
  CHECK(same_bits(got.kv_pool, want.kv_pool));
  CHECK(same_bits(got.kv_indices, want.kv_indices));
  CHECK(same_bits(got.kv_indptr, want.kv_indptr));
  CHECK(same_bits(got.kv_slot_ids, want.kv_slot_ids));
  CHECK(same_bits(got.kv_draft, want.kv_draft));
  CHECK(same_bits(got.qo_indptr, want.qo_indptr));
  CHECK(same_bits(got.draft_mask, want.draft_mask));
  CHECK(same_bits(got.draft_mask_indptr, want.draft_mask_indptr));
  CHECK(same_bits(got.draft_parent, want.draft_parent));
  CHECK(got.int_attrs == want.int_attrs);
  REQUIRE(got.outputs.size() == want.outputs.size());
  for (size_t i = 0; i < want.outputs.size(); ++i) {
    INFO("output " << want.outputs[i].producer);
    CHECK(got.outputs[i].producer == want.outputs[i].producer);
    CHECK(got.outputs[i].description == want.outputs[i].description);
    CHECK(got.outputs[i].out_is_bf16 == want.outputs[i].out_is_bf16);
    CHECK(got.outputs[i].lse_stored == want.outputs[i].lse_stored);
    CHECK(same_bits(got.outputs[i].out, want.outputs[i].out));
    CHECK(same_bits(got.outputs[i].lse, want.outputs[i].lse));
  }
}

// Raw HDF5 look at one dataset: layout, filter count and element type.
struct DatasetLayout {
  H5D_layout_t layout = H5D_LAYOUT_ERROR;
  int nfilters = -1;
  H5Z_filter_t filter0 = -1, filter1 = -1;
  H5T_class_t type_class = H5T_NO_CLASS;
  size_t type_size = 0;
  std::string dtype_attr;
};

DatasetLayout inspect(const std::string& path, const std::string& dataset) {
  DatasetLayout r;
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(f >= 0);
  const hid_t d = H5Dopen2(f, dataset.c_str(), H5P_DEFAULT);
  REQUIRE(d >= 0);
  const hid_t dcpl = H5Dget_create_plist(d);
  r.layout = H5Pget_layout(dcpl);
  r.nfilters = H5Pget_nfilters(dcpl);
  unsigned flags = 0, conf = 0;
  size_t nelmts = 0;
  if (r.nfilters >= 2) {
    r.filter0 = H5Pget_filter2(dcpl, 0, &flags, &nelmts, nullptr, 0, nullptr, &conf);
    nelmts = 0;
    r.filter1 = H5Pget_filter2(dcpl, 1, &flags, &nelmts, nullptr, 0, nullptr, &conf);
  }
  const hid_t t = H5Dget_type(d);
  r.type_class = H5Tget_class(t);
  r.type_size = H5Tget_size(t);
  if (H5Aexists(d, "dtype") > 0) {
    const hid_t a = H5Aopen(d, "dtype", H5P_DEFAULT);
    const hid_t mt = H5Tcopy(H5T_C_S1);
    H5Tset_size(mt, H5T_VARIABLE);
    char* s = nullptr;
    if (H5Aread(a, mt, &s) >= 0 && s != nullptr) r.dtype_attr = s;
    H5free_memory(s);
    H5Tclose(mt);
    H5Aclose(a);
  }
  H5Tclose(t);
  H5Pclose(dcpl);
  H5Dclose(d);
  H5Fclose(f);
  return r;
}

// A file holding case "c" (nontrivial_case("c", 4)) alone, for the tests that add outputs to it;
// n is the case's row count (n_q * H), the length of an lse.
struct OneCaseFile {
  TempDir dir;
  std::string path;
  Case c;
  size_t n;
  explicit OneCaseFile(const std::string& file)
      : path(dir.file(file)), c(nontrivial_case("c", 4)), n(static_cast<size_t>(c.n_q() * c.num_heads)) {
    vattn::write_case_file(path, test_header(), {c});
  }
};

}  // namespace

TEST_CASE("a hand-built case survives write and read bit for bit", "[h5]") {
  TempDir dir;
  const std::string path = dir.file("roundtrip.h5");
  const Case late = nontrivial_case("step000120_layer07", 11);
  Case early = nontrivial_case("step000007_layer01", 12);
  early.int_attrs.erase("tp_rank");
  early.kv_slot_ids.clear();
  early.outputs.pop_back();
  vattn::write_case_file(path, test_header(), {late, early});

  const vattn::CaseFile f = vattn::read_case_file(path);
  CHECK(f.path == path);
  CHECK(f.header.source == "fixture");
  CHECK(f.header.created == "2025-01-02T03:04:05Z");
  CHECK(f.header.generator == "test_case_h5");
  CHECK(f.header.optional == test_header().optional);
  CHECK(f.header.format_version == 1);
  REQUIRE(f.cases.size() == 2);
  require_same_case(f.cases[0], early);  // group-name order, not write order
  require_same_case(f.cases[1], late);

  const DatasetLayout serving = inspect(path, "/cases/step000120_layer07/outputs/serving/out");
  CHECK(serving.type_class == H5T_INTEGER);
  CHECK(serving.type_size == 2);
  CHECK(serving.dtype_attr == "bfloat16");
  const DatasetLayout oracle = inspect(path, "/cases/step000120_layer07/outputs/oracle_fp64/out");
  CHECK(oracle.type_class == H5T_FLOAT);
  CHECK(oracle.type_size == 4);
}

TEST_CASE("read_case_file can pick one case, and names a missing one", "[h5]") {
  TempDir dir;
  const std::string path = dir.file("pick.h5");
  vattn::write_case_file(path, test_header(), {nontrivial_case("b", 1), nontrivial_case("a", 2)});
  CHECK(vattn::list_cases(path) == std::vector<std::string>{"a", "b"});
  const vattn::CaseFile f = vattn::read_case_file(path, "b");
  REQUIRE(f.cases.size() == 1);
  require_same_case(f.cases[0], nontrivial_case("b", 1));
  try {
    vattn::read_case_file(path, "c");
    FAIL("a missing case was not reported");
  } catch (const vattn::InputError& e) {
    CHECK(e.file() == path);
    CHECK(e.case_name() == "c");
  }
}

TEST_CASE("datasets over 64 KiB are chunked with shuffle and deflate, small ones are not", "[h5]") {
  TempDir dir;
  const std::string path = dir.file("big.h5");
  // q: 17 drafts x 8 heads x 576 x 2 bytes = 156672 bytes, over the threshold.
  Case big =
      build_case("big", 8, 576, 512, {300, 13}, {{-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}, {-1}}, 20, 5);
  vattn::write_case_file(path, test_header(), {big});

  const DatasetLayout q = inspect(path, "/cases/big/q");
  CHECK(q.layout == H5D_CHUNKED);
  CHECK(q.nfilters == 2);
  CHECK(q.filter0 == H5Z_FILTER_SHUFFLE);
  CHECK(q.filter1 == H5Z_FILTER_DEFLATE);
  const DatasetLayout pool = inspect(path, "/cases/big/kv_pool");
  CHECK(pool.layout == H5D_CHUNKED);
  CHECK(pool.nfilters == 2);
  const DatasetLayout indptr = inspect(path, "/cases/big/qo_indptr");
  CHECK(indptr.layout == H5D_CONTIGUOUS);
  CHECK(indptr.nfilters == 0);

  const vattn::CaseFile f = vattn::read_case_file(path);
  REQUIRE(f.cases.size() == 1);
  require_same_case(f.cases[0], big);
}

TEST_CASE("an empty created and generator are filled on write", "[h5]") {
  TempDir dir;
  const std::string path = dir.file("defaults.h5");
  vattn::CaseFileHeader h;
  h.source = "synthetic:uniform";
  vattn::write_case_file(path, h, {nontrivial_case("c", 3)});
  const vattn::CaseFile f = vattn::read_case_file(path);
  CHECK(f.header.source == "synthetic:uniform");
  CHECK(std::regex_match(f.header.created, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  CHECK(f.header.generator == std::string("vattn ") + VATTN_VERSION);
  CHECK(f.header.optional.empty());
}

TEST_CASE("string attributes are variable-length UTF-8 (h5py reads them as str)", "[h5]") {
  TempDir dir;
  const std::string path = dir.file("strings.h5");
  vattn::write_case_file(path, test_header(), {nontrivial_case("c", 3)});
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(f >= 0);
  for (const char* name : {"format", "source", "created", "generator", "notes"}) {
    INFO(name);
    const hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    REQUIRE(a >= 0);
    const hid_t t = H5Aget_type(a);
    CHECK(H5Tget_class(t) == H5T_STRING);
    CHECK(H5Tis_variable_str(t) > 0);
    CHECK(H5Tget_cset(t) == H5T_CSET_UTF8);
    H5Tclose(t);
    H5Aclose(a);
  }
  H5Fclose(f);
}

TEST_CASE("write_case_output adds, then replaces, one producer's output", "[h5]") {
  OneCaseFile file("outputs.h5");
  const std::string& path = file.path;
  Case& c = file.c;
  const size_t n = file.n;
  std::mt19937 rng(99);
  StoredOutput k1{"kernel:rev1", "first run", bf16_valued_floats(n * 32, rng), true, random_floats(n, rng)};
  vattn::write_case_output(path, "c", k1);
  c.outputs.insert(c.outputs.begin(), k1);  // "kernel:rev1" sorts before "oracle_fp64"
  require_same_case(vattn::read_case_file(path).cases.at(0), c);

  StoredOutput k1b{"kernel:rev1", "second run", bf16_valued_floats(n * 32, rng), true, random_floats(n, rng)};
  vattn::write_case_output(path, "c", k1b);
  c.outputs[0] = k1b;
  require_same_case(vattn::read_case_file(path).cases.at(0), c);

  StoredOutput wrong = k1b;
  wrong.lse.pop_back();
  CHECK_THROWS_WITH(vattn::write_case_output(path, "c", wrong),
                    Catch::Contains("case 'c'") && Catch::Contains("outputs/kernel:rev1/lse"));
  CHECK_THROWS_AS(vattn::write_case_output(path, "nope", k1b), std::runtime_error);
  // out is bf16 for every producer but oracle_fp64, which stores float32 (case-format.md).
  StoredOutput f32_kernel = k1b;
  f32_kernel.out_is_bf16 = false;
  CHECK_THROWS_WITH(vattn::write_case_output(path, "c", f32_kernel),
                    Catch::Contains("outputs/kernel:rev1/out") && Catch::Contains("must be bf16"));
  StoredOutput bf16_oracle = k1b;
  bf16_oracle.producer = "oracle_fp64";
  CHECK_THROWS_WITH(vattn::write_case_output(path, "c", bf16_oracle),
                    Catch::Contains("outputs/oracle_fp64/out") && Catch::Contains("float32, not bf16"));
  require_same_case(vattn::read_case_file(path).cases.at(0), c);  // a refused write changes nothing
}

TEST_CASE("a producer may be stored without lse, oracle_fp64 may not", "[h5]") {
  OneCaseFile file("no_lse.h5");
  const std::string& path = file.path;
  const size_t n = file.n;
  std::mt19937 rng(7);
  StoredOutput serving{"serving", "a kernel that returns no lse", bf16_valued_floats(n * 32, rng), true, {}};
  serving.lse_stored = false;
  vattn::write_case_output(path, "c", serving);
  const Case back = vattn::read_case_file(path).cases.at(0);
  const auto it = std::find_if(back.outputs.begin(), back.outputs.end(),
                               [](const StoredOutput& o) { return o.producer == "serving"; });
  REQUIRE(it != back.outputs.end());
  CHECK_FALSE(it->lse_stored);
  CHECK(it->lse.empty());
  CHECK(same_bits(it->out, serving.out));
  // Not stored but given values, and an oracle without lse, are refused.
  StoredOutput both = serving;
  both.lse.assign(n, 0.f);
  CHECK_THROWS_WITH(vattn::write_case_output(path, "c", both), Catch::Contains("marked as not stored"));
  StoredOutput oracle = serving;
  oracle.producer = "oracle_fp64";
  oracle.out_is_bf16 = false;
  CHECK_THROWS_WITH(vattn::write_case_output(path, "c", oracle), Catch::Contains("always stores lse"));
}

TEST_CASE("the writer refuses a case that does not validate and leaves the old file alone", "[h5]") {
  TempDir dir;
  const std::string path = dir.file("refuse.h5");
  const Case good = nontrivial_case("good", 6);
  vattn::write_case_file(path, test_header(), {good});

  Case bad = nontrivial_case("bad", 7);
  bad.kv_indices[0] = static_cast<int32_t>(bad.n_rows());
  CHECK_THROWS_WITH(vattn::write_case_file(path, test_header(), {bad}),
                    Catch::Contains("case 'bad'") && Catch::Contains("kv_indices"));
  Case stray = nontrivial_case("stray", 8);
  stray.int_attrs["seed"] = 1;
  CHECK_THROWS_WITH(vattn::write_case_file(path, test_header(), {stray}), Catch::Contains("field 'seed'"));
  CHECK_THROWS_WITH(vattn::write_case_file(path, test_header(), {good, good}), Catch::Contains("two cases"));
  Case recipe = nontrivial_case("recipe", 9);
  recipe.recipe = "hand-built seed=9";
  CHECK_THROWS_WITH(vattn::write_case_file(path, test_header(), {recipe}),
                    Catch::Contains("field 'recipe'") && Catch::Contains("does not parse"));
  vattn::CaseFileHeader no_source = test_header();
  no_source.source.clear();
  CHECK_THROWS_WITH(vattn::write_case_file(path, no_source, {good}), Catch::Contains("field 'source'"));

  const vattn::CaseFile f = vattn::read_case_file(path);
  REQUIRE(f.cases.size() == 1);
  require_same_case(f.cases[0], good);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
    CHECK(entry.path().filename() == "refuse.h5");  // no temporary left behind
  }
}

TEST_CASE("a generated case keeps its recipe, and a recipe of another shape is refused", "[h5]") {
  TempDir dir;
  const std::string path = dir.file("recipe.h5");
  const Case c = vattn::generate_case(vattn::Recipe::parse("B=2 H=2 P=[5,0] T=[3,2] tree=random seed=4"), "gen");
  vattn::write_case_file(path, test_header(), {c});
  const vattn::CaseFile f = vattn::read_case_file(path);
  REQUIRE(f.cases.size() == 1);
  CHECK(f.cases[0].recipe == c.recipe);
  CHECK(vattn::recipe_mismatch(f.cases[0]).empty());

  Case other = c;
  other.recipe = vattn::Recipe::parse("B=2 H=2 P=[6,0] T=[3,2] tree=random seed=4").to_line();
  CHECK_THAT(vattn::recipe_mismatch(other), Catch::Contains("request 0 has P=6 T=3, the case P=5 T=3"));
  other.recipe = vattn::Recipe::parse("B=2 H=4 P=[5,0] T=[3,2] tree=random seed=4").to_line();
  CHECK_THAT(vattn::recipe_mismatch(other), Catch::Contains("it has H=4, the case 2"));
  other.recipe = vattn::Recipe::parse("B=1 H=2 P=[5] T=[3] tree=random seed=4").to_line();
  CHECK_THAT(vattn::recipe_mismatch(other), Catch::Contains("it has B=1, the case 2"));
  CHECK_THROWS_WITH(vattn::write_case_file(dir.file("other.h5"), test_header(), {other}),
                    Catch::Contains("case 'gen'") && Catch::Contains("field 'recipe'"));
}

TEST_CASE("a file that is not HDF5 is refused with a clear reason", "[h5][validate]") {
  TempDir dir;
  const std::string path = dir.file("garbage.h5");
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 4096; ++i) out.put(static_cast<char>((i * 131 + 7) & 0xff));
  }
  for (int pass = 0; pass < 2; ++pass) {
    try {
      if (pass == 0)
        vattn::read_case_file(path);
      else
        vattn::list_cases(path);
      FAIL("garbage was accepted");
    } catch (const vattn::InputError& e) {
      CHECK(e.file() == path);
      CHECK_THAT(e.what(), Catch::Contains(path) && Catch::Contains("not an HDF5 file"));
    }
  }
}

TEST_CASE("a truncated HDF5 file is refused with the library's reason", "[h5][validate]") {
  TempDir dir;
  const std::string path = dir.file("truncated.h5");
  vattn::write_case_file(path, test_header(), {nontrivial_case("c", 9)});
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  const ssize_t open_before = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  try {
    vattn::read_case_file(path);
    FAIL("a truncated file was accepted");
  } catch (const vattn::InputError& e) {
    CHECK(e.file() == path);
    CHECK_THAT(e.what(), Catch::Contains("cannot open the HDF5 file (HDF5: "));
  }
  CHECK(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) == open_before);
}

TEST_CASE("a write that HDF5 cannot do is a runtime_error naming the file", "[h5]") {
  TempDir dir;
  const std::string path = dir.file("no/such/dir/out.h5");
  const ssize_t open_before = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  CHECK_THROWS_WITH(vattn::write_case_file(path, test_header(), {nontrivial_case("c", 10)}),
                    Catch::Contains(path) && Catch::Contains("No such file or directory"));
  CHECK(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) == open_before);
}

TEST_CASE("a path that does not exist is refused with a clear reason", "[h5][validate]") {
  TempDir dir;
  const std::string path = dir.file("absent.h5");
  try {
    vattn::read_case_file(path);
    FAIL("a missing file was accepted");
  } catch (const vattn::InputError& e) {
    CHECK(e.file() == path);
    CHECK_THAT(e.what(), Catch::Contains(path) && Catch::Contains("does not exist"));
  }
  CHECK_THROWS_AS(vattn::write_case_output(path, "c", StoredOutput{}), vattn::InputError);
}

// Issue 51: a case file (a repro in a campaign folder, `vattn gen -o`) is written through a fresh
// temporary of a random name and renamed into place; nothing planted beside it is followed.
TEST_CASE("the writer follows no planted link: not at the file and not at a temporary name", "[h5]") {
  TempDir dir, outside("vattn_outside");
  const std::string victim = outside.file("precious.txt");
  std::ofstream(victim) << "precious\n";
  const std::string path = dir.file("repro.h5");
  // The names the writer of before used (FILE.tmpPID) and a link at the file itself.
  std::filesystem::create_symlink(victim, path + ".tmp" + std::to_string(::getpid()));
  vattn::write_case_file(path, test_header(), {nontrivial_case("c", 11)});
  CHECK(std::filesystem::is_regular_file(std::filesystem::symlink_status(path)));
  CHECK(vattn::read_case_file(path).cases.size() == 1);
  CHECK(std::filesystem::is_symlink(path + ".tmp" + std::to_string(::getpid())));

  const std::string linked = dir.file("linked.h5");
  std::filesystem::create_symlink(victim, linked);
  CHECK_THROWS_WITH(vattn::write_case_file(linked, test_header(), {nontrivial_case("c", 12)}),
                    Catch::Contains(linked) && Catch::Contains("symbolic link"));
  const std::string dangling = dir.file("dangling.h5");
  std::filesystem::create_symlink(outside.file("new.h5"), dangling);
  CHECK_THROWS_WITH(vattn::write_case_file(dangling, test_header(), {nontrivial_case("c", 13)}),
                    Catch::Contains(dangling) && Catch::Contains("symbolic link"));
  CHECK_FALSE(std::filesystem::exists(outside.file("new.h5")));
  std::ifstream in(victim);
  std::string text;
  std::getline(in, text);
  CHECK(text == "precious");
  // No temporary is left beside the files (the planted link aside).
  for (const auto& entry : std::filesystem::directory_iterator(dir.path))
    CHECK_THAT(entry.path().filename().string(), !Catch::Contains(".tmp-"));
}

TEST_CASE("a write the disk refuses is an error naming the file and leaves nothing behind", "[h5]") {
  TempDir dir;
  const std::string path = dir.file("full.h5");
  vattn::write_case_file(path, test_header(), {nontrivial_case("old", 14)});
  const ssize_t open_before = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  // A file-size limit (ulimit -f) of 4 KiB: the write fails with EFBIG (SIGXFSZ ignored, as
  // vattn's main does). Restored after.
  struct rlimit before {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &before) == 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = before;
  small.rlim_cur = 4096;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  std::string what;
  try {
    vattn::write_case_file(path, test_header(), {nontrivial_case("new", 15)});
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &before) == 0);
  std::signal(SIGXFSZ, old_handler);
  CHECK_THAT(what, Catch::Contains(path) && Catch::Contains("File too large"));
  const vattn::CaseFile f = vattn::read_case_file(path);  // the old file, whole
  REQUIRE(f.cases.size() == 1);
  CHECK(f.cases[0].name == "old");
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) CHECK(entry.path().filename() == "full.h5");
  // HDF5 holds no file open after the failure (a leaked id crashed the process at exit).
  CHECK(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) == open_before);
}
