// SPDX-License-Identifier: Apache-2.0
// A case on the device: every input and output in its own guarded buffer, the draft mask
// both packed (for kernels, per vattn_abi.h) and dense (for the naive oracle, which must not
// share the kernel's mask code).
#pragma once

#include <string>
#include <vector>

#include "kernels/vattn_abi.h"
#include "vattn/case/case.h"
#include "vattn/gpu/device_buffer.h"
#include "vattn/oracle/gpu_naive_oracle.h"

namespace vattn {

// Packs M_b rows into 32-bit words (bit j%32 of word j/32); word_indptr gets [B+1] offsets.
std::vector<uint32_t> pack_mask_bits(const Case& c, std::vector<int64_t>& word_indptr);

class StagedUpload;

class DeviceCase {
 public:
  explicit DeviceCase(const Case& c);
  // The same, with the inputs copied through `up` (staged_upload.h): it does not wait for other
  // threads' GPU work, and returns once the inputs are on the device.
  DeviceCase(const Case& c, StagedUpload& up);
  const Case& host() const { return *c_; }

  vattn_args kernel_args() const;
  NaiveGpuArgs oracle_args(float* out_f32, float* lse_f32) const;
  void set_forced_splits(int splits);  // device-side value the kernel reads (0 = kernel picks)
  void poison_outputs();
  // Guard violations of every buffer (inputs too: a kernel must not write them).
  std::vector<std::string> guard_violations() const;
  // out widened from bf16 to float; lse as is.
  void download(std::vector<float>& out, std::vector<float>& lse) const;

  // Places the pool at slot `base` of a larger pool whose other rows are NaN (0xFF bytes) and
  // shifts kv_indices by it: the same attention, with slot ids past 2^22 (slot * d_qk past 2^31).
  void relocate_pool(int64_t base);
  int64_t n_slots() const { return n_slots_; }

  DeviceBuffer q, kv_pool, kv_indices, kv_indptr, kv_draft, qo_indptr;
  DeviceBuffer mask_bits, mask_word_indptr, mask_dense, mask_indptr, forced_splits;
  DeviceBuffer out, lse;

 private:
  void upload_all(StagedUpload* up);

  const Case* c_;
  int64_t n_slots_ = 0;
};

}  // namespace vattn
