// SPDX-License-Identifier: Apache-2.0
#include "vattn/gpu/kernel_runner.h"

#include <algorithm>
#include <cstdio>

#include <cuda_runtime.h>

namespace vattn {

std::string RunResult::problem(const vattn_revision* api) const {
  std::string s;
  if (status != VATTN_OK) s += std::string("run() returned ") + (api ? api->status_string(status) : "an error") + "; ";
  if (device_error)
    s += "device error word 0x" + [&] {
      char buf[16];
      std::snprintf(buf, sizeof buf, "%x", device_error);
      return std::string(buf);
    }() + "; ";
  for (const auto& g : guard_violations) s += g + "; ";
  return s;
}

vattn_limits limits_for(const Case& c, int max_splits) {
  vattn_limits l{};
  l.max_requests = std::max(1, c.num_requests());
  l.max_total_drafts = std::max<int64_t>(1, c.n_q());
  int t = 1;
  for (int b = 0; b < c.num_requests(); ++b) t = std::max(t, c.drafts(b));
  l.max_drafts_per_request = t;
  l.num_heads = c.num_heads;
  l.max_splits = std::max(1, max_splits);
  return l;
}

KernelRunner::KernelRunner(Revision rev, const vattn_limits& limits) : rev_(std::move(rev)), limits_(limits) {
  size_t bytes = 0;
  const vattn_status st = rev_.api->workspace_size(&limits_, &bytes);
  if (st != VATTN_OK) throw CudaError("workspace_size: " + std::string(rev_.api->status_string(st)));
  // 256 bytes more than asked: the argument-contract property (vattn/testbed/contract.h)
  // offers a misaligned workspace of the full size, which must still lie inside the buffer.
  ws_ = DeviceBuffer("workspace", bytes + 256);
}

vattn_status KernelRunner::enqueue(const DeviceCase& dc, cudaStream_t stream) {
  const vattn_args a = dc.kernel_args();
  return rev_.api->run(&a, &limits_, ws_.data(), ws_.bytes(), stream);
}

uint32_t KernelRunner::read_device_error() const {
  uint32_t e = 0;
  ws_.download(&e, sizeof e);
  return e;
}

RunResult KernelRunner::run(DeviceCase& dc, int forced_splits, cudaStream_t stream, unsigned char output_fill) {
  RunResult r;
  dc.out.fill(output_fill);
  dc.lse.fill(output_fill);
  ws_.poison();
  dc.set_forced_splits(forced_splits);
  r.status = enqueue(dc, stream);
  VATTN_CUDA(cudaStreamSynchronize(stream));
  VATTN_CUDA(cudaGetLastError());
  if (r.status == VATTN_OK) {
    uint32_t words[2] = {0, 0};
    ws_.download(words, sizeof words);
    r.device_error = words[VATTN_WS_ERROR_WORD];
    r.splits_used = words[VATTN_WS_SPLITS_USED_WORD];
  }
  dc.download(r.out, r.lse);
  r.guard_violations = dc.guard_violations();
  const std::string ws_guard = ws_.check_guards();
  if (!ws_guard.empty()) r.guard_violations.push_back(ws_guard);
  return r;
}

}  // namespace vattn
