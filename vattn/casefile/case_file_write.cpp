// SPDX-License-Identifier: Apache-2.0
// Case-file writer (docs/case-format.md, v1): write_case_file and write_case_output.
// A whole file is built in memory, then written by replace_file (a fresh temporary beside it,
// renamed into place), so a failed write never leaves a half-file where a good one was.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <ctime>
#include <set>
#include <stdexcept>
#include <vector>

#include "vattn/case/bf16.h"
#include "vattn/case/fd_write.h"
#include "vattn/casefile/case_file.h"
#include "vattn/casefile/h5_attr.h"
#include "vattn/casefile/h5_case_io.h"
#include "vattn/casefile/h5_dataset.h"
#include "vattn/casefile/h5_group.h"
#include "vattn/recipe/recipe.h"

namespace vattn {

namespace {

using h5::Where;

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// A name becomes one HDF5 path component.
bool is_component(const std::string& name) {
  return !name.empty() && name != "." && name.find('/') == std::string::npos;
}

template <class Keys>
bool in_keys(const Keys& keys, const std::string& key) {
  return std::find_if(std::begin(keys), std::end(keys), [&](const char* k) { return key == k; }) != std::end(keys);
}

hsize_t u(int64_t v) { return static_cast<hsize_t>(v); }

void write_bf16(hid_t loc, const char* name, const uint16_t* bits, const std::vector<hsize_t>& dims, const Where& w) {
  h5::Dataset ds = h5::write_dataset(loc, name, H5T_STD_U16LE, H5T_NATIVE_UINT16, bits, dims, w);
  h5::write_string_attr(ds.get(), "dtype", "bfloat16", w);
  if (ds.close() < 0) w.write_error_h5("cannot close the dataset");
}

template <class T>
void write_plain(hid_t loc, const char* name, hid_t file_type, hid_t mem_type, const std::vector<T>& v,
                 const Where& w) {
  h5::Dataset ds = h5::write_dataset(loc, name, file_type, mem_type, v.data(), {v.size()}, w.at(name));
  if (ds.close() < 0) w.at(name).write_error_h5("cannot close the dataset");
}

void check_output(const StoredOutput& o, int64_t n_q, int heads, int d_v, const Where& w) {
  if (!is_component(o.producer)) w.write_error("producer name '" + o.producer + "' is empty or contains '/'");
  const std::string base = "outputs/" + o.producer + "/";
  if (o.out_is_bf16 == (o.producer == kOracleProducer)) {
    w.at(base + "out")
        .write_error(o.out_is_bf16 ? std::string(kOracleProducer) + " stores out as float32, not bf16"
                                   : "must be bf16: only " + std::string(kOracleProducer) + " stores float32");
  }
  const size_t want_out = static_cast<size_t>(n_q) * static_cast<size_t>(heads) * static_cast<size_t>(d_v);
  const size_t want_lse = static_cast<size_t>(n_q) * static_cast<size_t>(heads);
  if (o.out.size() != want_out) {
    w.at(base + "out")
        .write_error("has " + std::to_string(o.out.size()) + " elements, expected " + std::to_string(want_out) +
                     " (n_q x num_heads x d_v)");
  }
  if (!o.lse_stored && o.producer == kOracleProducer)
    w.at(base + "lse").write_error(std::string(kOracleProducer) + " always stores lse");
  if (!o.lse_stored && !o.lse.empty())
    w.at(base + "lse").write_error("has " + std::to_string(o.lse.size()) + " elements but is marked as not stored");
  if (o.lse_stored && o.lse.size() != want_lse) {
    w.at(base + "lse")
        .write_error("has " + std::to_string(o.lse.size()) + " elements, expected " + std::to_string(want_lse) +
                     " (n_q x num_heads)");
  }
}

void write_output(hid_t outputs, const StoredOutput& o, int64_t n_q, int heads, int d_v, const Where& where) {
  const std::string base = "outputs/" + o.producer;
  const Where w = where.at(base);
  h5::Group g = h5::create_group(outputs, o.producer.c_str(), w);
  h5::write_string_attr(g.get(), "description", o.description, w);
  const std::vector<hsize_t> out_dims{u(n_q), u(heads), u(d_v)};
  if (o.out_is_bf16) {
    std::vector<uint16_t> bits(o.out.size());
    for (size_t i = 0; i < bits.size(); ++i) bits[i] = float_to_bf16(o.out[i]);
    write_bf16(g.get(), "out", bits.data(), out_dims, where.at(base + "/out"));
  } else {
    h5::Dataset ds = h5::write_dataset(g.get(), "out", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, o.out.data(), out_dims,
                                       where.at(base + "/out"));
    if (ds.close() < 0) where.at(base + "/out").write_error_h5("cannot close the dataset");
  }
  if (o.lse_stored) {
    h5::Dataset lse = h5::write_dataset(g.get(), "lse", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, o.lse.data(),
                                        {u(n_q), u(heads)}, where.at(base + "/lse"));
    if (lse.close() < 0) w.write_error_h5("cannot close the lse dataset");
  }
  if (g.close() < 0) w.write_error_h5("cannot close the output group");
}

// Everything a case must satisfy before a byte is written.
void check_case(const Case& c, const std::string& path) {
  const Where w{path, c.name, ""};
  if (!is_component(c.name)) w.write_error("case name is empty or contains '/'");
  try {
    validate(c);
  } catch (const InputError& e) {
    w.write_error(std::string("the case does not validate: ") + e.what());
  }
  if (const std::string why = recipe_mismatch(c); !why.empty()) w.at("recipe").write_error(why);
  for (const auto& [key, value] : c.int_attrs) {
    if (!in_keys(h5::kCaseIntAttrKeys, key)) {
      w.at(key).write_error("is not a case attribute of the schema (layer, step, tp_rank)");
    }
  }
  std::set<std::string> producers;
  for (const StoredOutput& o : c.outputs) {
    check_output(o, c.n_q(), c.num_heads, c.d_v, w);
    if (!producers.insert(o.producer).second) w.at("outputs/" + o.producer).write_error("producer appears twice");
  }
}

void write_case(hid_t cases, const Case& c, const std::string& path) {
  const Where w{path, c.name, ""};
  h5::Group g = h5::create_group(cases, c.name.c_str(), w);
  const hid_t gid = g.get();
  h5::write_int_attr(gid, "num_heads", c.num_heads, H5T_STD_I32LE, w.at("num_heads"));
  h5::write_int_attr(gid, "d_qk", c.d_qk, H5T_STD_I32LE, w.at("d_qk"));
  h5::write_int_attr(gid, "d_v", c.d_v, H5T_STD_I32LE, w.at("d_v"));
  h5::write_float_attr(gid, "sm_scale", c.sm_scale, w.at("sm_scale"));
  h5::write_int_attr(gid, "num_requests", c.num_requests(), H5T_STD_I32LE, w.at("num_requests"));
  if (!c.recipe.empty()) h5::write_string_attr(gid, "recipe", c.recipe, w.at("recipe"));
  for (const auto& [key, value] : c.int_attrs) h5::write_int_attr(gid, key.c_str(), value, H5T_STD_I64LE, w.at(key));

  const int64_t n_q = c.n_q();
  const auto heads = u(c.num_heads), d_qk = u(c.d_qk);
  write_bf16(gid, "q", c.q.data(), {u(n_q), heads, d_qk}, w.at("q"));
  write_bf16(gid, "kv_pool", c.kv_pool.data(), {u(c.n_rows()), d_qk}, w.at("kv_pool"));
  write_plain(gid, "kv_indices", H5T_STD_I32LE, H5T_NATIVE_INT32, c.kv_indices, w);
  write_plain(gid, "kv_indptr", H5T_STD_I32LE, H5T_NATIVE_INT32, c.kv_indptr, w);
  if (!c.kv_slot_ids.empty()) write_plain(gid, "kv_slot_ids", H5T_STD_I64LE, H5T_NATIVE_INT64, c.kv_slot_ids, w);
  write_bf16(gid, "kv_draft", c.kv_draft.data(), {u(n_q), d_qk}, w.at("kv_draft"));
  write_plain(gid, "qo_indptr", H5T_STD_I32LE, H5T_NATIVE_INT32, c.qo_indptr, w);
  write_plain(gid, "draft_mask", H5T_STD_U8LE, H5T_NATIVE_UINT8, c.draft_mask, w);
  write_plain(gid, "draft_mask_indptr", H5T_STD_I64LE, H5T_NATIVE_INT64, c.draft_mask_indptr, w);
  if (!c.draft_parent.empty()) write_plain(gid, "draft_parent", H5T_STD_I32LE, H5T_NATIVE_INT32, c.draft_parent, w);

  if (!c.outputs.empty()) {
    h5::Group outputs = h5::create_group(gid, "outputs", w.at("outputs"));
    for (const StoredOutput& o : c.outputs) write_output(outputs.get(), o, n_q, c.num_heads, c.d_v, w);
    if (outputs.close() < 0) w.at("outputs").write_error_h5("cannot close the group");
  }
  if (g.close() < 0) w.write_error_h5("cannot close the case group");
}

void write_header(hid_t file, const CaseFileHeader& h, const std::string& path) {
  const Where w{path, "", ""};
  h5::write_string_attr(file, "format", kCaseFormatName, w.at("format"));
  h5::write_int_attr(file, "format_version", kCaseFormatVersion, H5T_STD_I32LE, w.at("format_version"));
  h5::write_string_attr(file, "source", h.source, w.at("source"));
  h5::write_string_attr(file, "created", h.created.empty() ? utc_now_iso8601() : h.created, w.at("created"));
  h5::write_string_attr(file, "generator", h.generator.empty() ? std::string("vattn ") + VATTN_VERSION : h.generator,
                        w.at("generator"));
  for (const auto& [key, value] : h.optional) h5::write_string_attr(file, key.c_str(), value, w.at(key));
}

void check_header(const CaseFileHeader& h, const std::string& path) {
  const Where w{path, "", ""};
  if (h.source.empty()) {
    w.at("source").write_error("must be set: capture:<server>, synthetic:<profile>, fuzz:<revision> or fixture");
  }
  for (const auto& [key, value] : h.optional) {
    if (!in_keys(h5::kOptionalHeaderKeys, key)) {
      w.at(key).write_error("is not a root attribute of the schema (model, gpu, notes)");
    }
  }
}

// The in-memory file's growth step; only what is written is kept in the image.
constexpr size_t kImageIncrement = size_t{16} << 20;

// The whole file, built in memory by HDF5's core driver (no backing store) and returned as bytes.
// Why not write through HDF5 to disk: when HDF5's own write fails (a full disk, `ulimit -f`),
// HDF5 1.10's H5Fclose frees the file but keeps its id (HDFFV-11052), and the library's exit
// handler then crashes on it. In memory nothing HDF5 writes can fail that way, and the one write
// to disk is replace_file's, whose errors are plain errno. The label under /dev/null names the
// in-memory file for HDF5 alone: no path under a device exists, so HDF5's first, tentative open
// of the name (which for this driver would read a file of that name) finds nothing.
std::vector<char> file_image(const CaseFileHeader& header, const std::vector<Case>& cases, const std::string& path) {
  const Where w{path, "", ""};
  const h5::Plist fapl(H5Pcreate(H5P_FILE_ACCESS));
  if (!fapl.valid() || H5Pset_fapl_core(fapl.get(), kImageIncrement, false) < 0)
    w.write_error_h5("cannot set up a file in memory");
  static std::atomic<uint64_t> serial{0};
  const std::string label =
      "/dev/null/vattn-case-file-" + std::to_string(::getpid()) + "-" + std::to_string(serial.fetch_add(1));
  h5::File file(H5Fcreate(label.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()));
  if (!file.valid()) w.write_error_h5("cannot create the file in memory");
  write_header(file.get(), header, path);
  h5::Group group = h5::create_group(file.get(), "cases", w.at("cases"));
  for (const Case& c : cases) write_case(group.get(), c, path);
  if (group.close() < 0 || H5Fflush(file.get(), H5F_SCOPE_GLOBAL) < 0) w.write_error_h5("cannot finish the file");
  const ssize_t size = H5Fget_file_image(file.get(), nullptr, 0);
  if (size <= 0) w.write_error_h5("cannot take the file's image");
  std::vector<char> image(static_cast<size_t>(size));
  if (H5Fget_file_image(file.get(), image.data(), image.size()) != size)
    w.write_error_h5("cannot take the file's image");
  if (file.close() < 0) w.write_error_h5("cannot close the file");
  return image;
}

}  // namespace

void write_case_file(const std::string& path, const CaseFileHeader& header, const std::vector<Case>& cases) {
  h5::silence_library_errors();
  check_header(header, path);
  std::set<std::string> names;
  for (const Case& c : cases) {
    check_case(c, path);
    if (!names.insert(c.name).second) Where{path, c.name, ""}.write_error("two cases have this name");
  }
  // Refused before the image is built: a link at `path` (replace_file refuses it too, later).
  if (const std::string why = replace_problem(path); !why.empty()) throw std::runtime_error(why);
  const std::vector<char> image = file_image(header, cases, path);
  const std::string why = replace_file(path, image.data(), image.size(), Durability::kSynced);
  if (!why.empty()) throw std::runtime_error(why);
}

void write_case_output(const std::string& path, const std::string& case_name, const StoredOutput& output) {
  h5::File file = h5::open_case_file(path, true);
  h5::read_header(file.get(), path);
  const Where w{path, case_name, ""};
  const h5::Group cases = h5::open_group(file.get(), "cases", "group '/cases'", Where{path, "", "cases"});
  if (!h5::has_link(cases.get(), case_name.c_str(), w)) w.write_error("no such case under /cases");
  const h5::Group g = h5::open_group(cases.get(), case_name.c_str(), "case group", w);

  // The output's shape follows the stored case: num_heads, d_v and n_q (rows of q).
  const int64_t heads = h5::read_int_attr(g.get(), "num_heads", w.at("num_heads"));
  const int64_t d_v = h5::read_int_attr(g.get(), "d_v", w.at("d_v"));
  const h5::Dataset q = h5::open_dataset(g.get(), "q", w.at("q"));
  const std::vector<hsize_t> q_dims = h5::dataset_dims(q.get(), w.at("q"));
  if (q_dims.size() != 3 || static_cast<int64_t>(q_dims[1]) != heads) {
    w.at("q").write_error("has shape " + h5::dims_text(q_dims) + ", not [n_q, num_heads, d_qk]");
  }
  check_output(output, static_cast<int64_t>(q_dims[0]), static_cast<int>(heads), static_cast<int>(d_v), w);

  const Where wo = w.at("outputs");
  h5::Group outputs = h5::has_link(g.get(), "outputs", wo) ? h5::open_group(g.get(), "outputs", "group 'outputs'", wo)
                                                           : h5::create_group(g.get(), "outputs", wo);
  if (h5::has_link(outputs.get(), output.producer.c_str(), wo) &&
      H5Ldelete(outputs.get(), output.producer.c_str(), H5P_DEFAULT) < 0) {
    w.at("outputs/" + output.producer).write_error_h5("cannot remove the old output group");
  }
  write_output(outputs.get(), output, static_cast<int64_t>(q_dims[0]), static_cast<int>(heads), static_cast<int>(d_v),
               w);
  if (outputs.close() < 0) wo.write_error_h5("cannot close the group");
  if (H5Fflush(file.get(), H5F_SCOPE_LOCAL) < 0) Where{path, "", ""}.write_error_h5("cannot flush the file");
}

}  // namespace vattn
