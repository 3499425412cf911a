// SPDX-License-Identifier: Apache-2.0
#include "vattn/gpu/naive_runner.h"

#include <cuda_runtime.h>

namespace vattn {

namespace {
void run(const DeviceCase& dc, std::vector<float>& out, std::vector<float>& lse, std::vector<float>* abs_pv,
         std::vector<float>* lse_scale) {
  const Case& c = dc.host();
  const size_t rows = static_cast<size_t>(c.n_q()) * static_cast<size_t>(c.num_heads);
  const size_t elems = rows * static_cast<size_t>(c.d_v);
  DeviceBuffer d_out("oracle_out", elems * sizeof(float)), d_lse("oracle_lse", rows * sizeof(float));
  DeviceBuffer d_abs("oracle_abs_pv", abs_pv ? elems * sizeof(float) : 0);
  DeviceBuffer d_scale("oracle_lse_scale", lse_scale ? rows * sizeof(float) : 0);
  d_out.poison();
  d_lse.poison();
  NaiveGpuArgs a = dc.oracle_args(d_out.as<float>(), d_lse.as<float>());
  a.abs_pv = abs_pv ? d_abs.as<float>() : nullptr;
  a.lse_scale = lse_scale ? d_scale.as<float>() : nullptr;
  // Its scratch is allocated inside (stream-ordered): a full device is waited out like any buffer's.
  VATTN_CUDA_ALLOC(with_memory_wait("naive oracle scratch", 0, [&] { return naive_gpu_attention(a, nullptr); }));
  VATTN_CUDA(cudaDeviceSynchronize());
  out.resize(elems);
  lse.resize(rows);
  d_out.download(out.data(), elems * sizeof(float));
  d_lse.download(lse.data(), rows * sizeof(float));
  if (abs_pv) {
    abs_pv->resize(elems);
    d_abs.download(abs_pv->data(), elems * sizeof(float));
  }
  if (lse_scale) {
    lse_scale->resize(rows);
    d_scale.download(lse_scale->data(), rows * sizeof(float));
  }
}
}  // namespace

void run_naive_gpu_oracle(const DeviceCase& dc, std::vector<float>& out, std::vector<float>& lse) {
  run(dc, out, lse, nullptr, nullptr);
}

Reference naive_gpu_reference(const DeviceCase& dc) {
  std::vector<float> out, lse, abs_pv, lse_scale;
  run(dc, out, lse, &abs_pv, &lse_scale);
  Reference r;
  r.out.assign(out.begin(), out.end());
  r.lse.assign(lse.begin(), lse.end());
  r.abs_pv.assign(abs_pv.begin(), abs_pv.end());
  r.lse_scale.assign(lse_scale.begin(), lse_scale.end());
  return r;
}

}  // namespace vattn
