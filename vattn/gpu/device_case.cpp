// SPDX-License-Identifier: Apache-2.0
#include "vattn/gpu/device_case.h"

#include <algorithm>

#include <cuda_runtime.h>

#include "vattn/case/bf16.h"
#include "vattn/gpu/staged_upload.h"

namespace vattn {

std::vector<uint32_t> pack_mask_bits(const Case& c, std::vector<int64_t>& word_indptr) {
  std::vector<uint32_t> bits;
  word_indptr.assign(1, 0);
  for (int b = 0; b < c.num_requests(); ++b) {
    const int t = c.drafts(b), words = (t + 31) / 32;
    const size_t base = bits.size();
    bits.resize(base + static_cast<size_t>(t) * words, 0u);
    for (int i = 0; i < t; ++i)
      for (int j = 0; j < t; ++j)
        if (c.visible(b, i, j)) bits[base + static_cast<size_t>(i) * words + j / 32] |= 1u << (j % 32);
    word_indptr.push_back(static_cast<int64_t>(bits.size()));
  }
  return bits;
}

namespace {
// Zero-length inputs still get a real (guarded) allocation so every pointer is valid. With a
// StagedUpload the copy is queued on its stream; the caller waits for it (upload_all).
template <class T>
DeviceBuffer upload_nonempty(const std::string& name, const std::vector<T>& v, StagedUpload* up) {
  const std::vector<T> one(v.empty() ? 1 : 0, T{});
  const std::vector<T>& src = v.empty() ? one : v;
  if (!up) return upload_vector(name, src);
  DeviceBuffer b(name, src.size() * sizeof(T));
  up->copy(b.data(), src.data(), src.size() * sizeof(T));
  return b;
}
}  // namespace

DeviceCase::DeviceCase(const Case& c) : c_(&c), n_slots_(c.n_rows()) { upload_all(nullptr); }

DeviceCase::DeviceCase(const Case& c, StagedUpload& up) : c_(&c), n_slots_(c.n_rows()) { upload_all(&up); }

void DeviceCase::upload_all(StagedUpload* up) {
  const Case& c = *c_;
  q = upload_nonempty("q", c.q, up);
  kv_pool = upload_nonempty("kv_pool", c.kv_pool, up);
  kv_indices = upload_nonempty("kv_indices", c.kv_indices, up);
  kv_indptr = upload_nonempty("kv_indptr", c.kv_indptr, up);
  kv_draft = upload_nonempty("kv_draft", c.kv_draft, up);
  qo_indptr = upload_nonempty("qo_indptr", c.qo_indptr, up);
  std::vector<int64_t> word_indptr;
  const auto bits = pack_mask_bits(c, word_indptr);
  mask_bits = upload_nonempty("mask_bits", bits, up);
  mask_word_indptr = upload_nonempty("mask_word_indptr", word_indptr, up);
  mask_dense = upload_nonempty("draft_mask", c.draft_mask, up);
  mask_indptr = upload_nonempty("draft_mask_indptr", c.draft_mask_indptr, up);
  forced_splits = upload_nonempty("forced_splits", std::vector<int32_t>{0}, up);
  const size_t rows = static_cast<size_t>(c.n_q()) * static_cast<size_t>(c.num_heads);
  out = DeviceBuffer("out", rows * static_cast<size_t>(c.d_v) * sizeof(uint16_t));
  lse = DeviceBuffer("lse", rows * sizeof(float));
  // The inputs are on the device before anyone reads this case. The guard bands were queued on
  // the legacy stream (DeviceBuffer), ahead of every kernel that will use the buffers.
  if (up) up->finish();
}

vattn_args DeviceCase::kernel_args() const {
  vattn_args a{};
  a.q = q.as<const uint16_t>();
  a.kv_pool = kv_pool.as<const uint16_t>();
  a.n_slots = n_slots_;
  a.kv_indices = kv_indices.as<const int32_t>();
  a.kv_indptr = kv_indptr.as<const int32_t>();
  a.kv_draft = kv_draft.as<const uint16_t>();
  a.qo_indptr = qo_indptr.as<const int32_t>();
  a.mask_bits = mask_bits.as<const uint32_t>();
  a.mask_word_indptr = mask_word_indptr.as<const int64_t>();
  a.forced_splits = forced_splits.as<const int32_t>();
  a.out = out.as<uint16_t>();
  a.lse = lse.as<float>();
  a.num_requests = c_->num_requests();
  a.n_q = c_->n_q();
  a.num_heads = c_->num_heads;
  a.d_qk = c_->d_qk;
  a.d_v = c_->d_v;
  a.sm_scale = static_cast<float>(c_->sm_scale);
  return a;
}

NaiveGpuArgs DeviceCase::oracle_args(float* out_f32, float* lse_f32) const {
  NaiveGpuArgs a{};
  a.q = q.as<const uint16_t>();
  a.kv_pool = kv_pool.as<const uint16_t>();
  a.kv_indices = kv_indices.as<const int32_t>();
  a.kv_indptr = kv_indptr.as<const int32_t>();
  a.kv_draft = kv_draft.as<const uint16_t>();
  a.qo_indptr = qo_indptr.as<const int32_t>();
  a.mask = mask_dense.as<const uint8_t>();
  a.mask_indptr = mask_indptr.as<const int64_t>();
  a.max_keys = 0;
  for (int b = 0; b < c_->num_requests(); ++b)
    a.max_keys = std::max<int64_t>(a.max_keys, static_cast<int64_t>(c_->prefix_len(b)) + c_->drafts(b));
  a.out = out_f32;
  a.lse = lse_f32;
  a.num_requests = c_->num_requests();
  a.n_q = c_->n_q();
  a.num_heads = c_->num_heads;
  a.d_qk = c_->d_qk;
  a.d_v = c_->d_v;
  a.sm_scale = static_cast<float>(c_->sm_scale);
  return a;
}

void DeviceCase::relocate_pool(int64_t base) {
  const Case& c = *c_;
  const size_t row_bytes = static_cast<size_t>(c.d_qk) * sizeof(uint16_t);
  const int64_t total = base + c.n_rows();
  DeviceBuffer big("kv_pool", static_cast<size_t>(total) * row_bytes);
  big.poison();
  if (!c.kv_pool.empty()) {
    VATTN_CUDA(cudaMemcpy(static_cast<char*>(big.data()) + static_cast<size_t>(base) * row_bytes, c.kv_pool.data(),
                          c.kv_pool.size() * sizeof(uint16_t), cudaMemcpyHostToDevice));
  }
  kv_pool = std::move(big);
  std::vector<int32_t> shifted(c.kv_indices);
  for (auto& i : shifted) i = static_cast<int32_t>(i + base);
  if (!shifted.empty()) kv_indices.upload(shifted.data(), shifted.size() * sizeof(int32_t));
  n_slots_ = total;
}

void DeviceCase::set_forced_splits(int splits) {
  const int32_t v = splits;
  forced_splits.upload(&v, sizeof v);
}

void DeviceCase::poison_outputs() {
  out.poison();
  lse.poison();
}

std::vector<std::string> DeviceCase::guard_violations() const {
  std::vector<std::string> v;
  for (const DeviceBuffer* b : {&q, &kv_pool, &kv_indices, &kv_indptr, &kv_draft, &qo_indptr, &mask_bits,
                                &mask_word_indptr, &mask_dense, &mask_indptr, &forced_splits, &out, &lse}) {
    std::string s = b->check_guards();
    if (!s.empty()) v.push_back(std::move(s));
  }
  return v;
}

void DeviceCase::download(std::vector<float>& out_f, std::vector<float>& lse_f) const {
  const size_t rows = static_cast<size_t>(c_->n_q()) * static_cast<size_t>(c_->num_heads);
  std::vector<uint16_t> bits(rows * static_cast<size_t>(c_->d_v));
  out.download(bits.data(), bits.size() * sizeof(uint16_t));
  out_f.resize(bits.size());
  std::transform(bits.begin(), bits.end(), out_f.begin(), bf16_to_float);
  lse_f.resize(rows);
  lse.download(lse_f.data(), rows * sizeof(float));
}

}  // namespace vattn
