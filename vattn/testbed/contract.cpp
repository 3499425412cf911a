// SPDX-License-Identifier: Apache-2.0
#include "vattn/testbed/contract.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include <cuda_runtime.h>

#include "vattn/gpu/cuda_check.h"

namespace vattn::testbed {

namespace {

struct Break {
  std::string what;                    // e.g. "d_v = 513"
  std::vector<vattn_status> expected;  // any of these (where vattn_abi.h allows two readings)
  std::function<void(vattn_args&, vattn_limits&, size_t& ws_bytes, void*& ws)> apply;
};

std::string status_name(const vattn_revision* api, vattn_status s) {
  const char* n = api->status_string ? api->status_string(s) : nullptr;
  return std::to_string(static_cast<int>(s)) + (n ? std::string(" (") + n + ")" : "");
}

bool all_bytes(const std::vector<unsigned char>& v, unsigned char b) {
  for (unsigned char x : v)
    if (x != b) return false;
  return true;
}

}  // namespace

std::string argument_contract_problem(KernelRunner& runner, DeviceCase& dc) {
  const vattn_revision* api = runner.revision().api;
  const vattn_limits lim = runner.limits();
  vattn_caps caps{};
  if (api->capabilities(&caps) != VATTN_OK) return "capabilities() failed";
  const vattn_status INVALID = VATTN_ERR_INVALID_ARGUMENT, UNSUPPORTED = VATTN_ERR_UNSUPPORTED,
                     LIMITS = VATTN_ERR_LIMITS, WORKSPACE = VATTN_ERR_WORKSPACE;
  std::vector<Break> breaks;
  auto pointer = [&](const char* name, auto member) {
    breaks.push_back({std::string(name) + " = null",
                      {INVALID},
                      [member](vattn_args& a, vattn_limits&, size_t&, void*&) { a.*member = nullptr; }});
  };
  pointer("q", &vattn_args::q);
  pointer("kv_pool", &vattn_args::kv_pool);
  pointer("kv_indices", &vattn_args::kv_indices);
  pointer("kv_indptr", &vattn_args::kv_indptr);
  pointer("kv_draft", &vattn_args::kv_draft);
  pointer("qo_indptr", &vattn_args::qo_indptr);
  pointer("mask_bits", &vattn_args::mask_bits);
  pointer("mask_word_indptr", &vattn_args::mask_word_indptr);
  pointer("out", &vattn_args::out);
  pointer("lse", &vattn_args::lse);
  // Misaligned by one element: the buffers stay valid memory, the kernel would fault reading them
  // in 16-byte (or 4-byte) pieces (docs/verify-attention.md: 16-byte aligned bf16 tensors).
  auto misaligned = [&](const char* name, auto member) {
    breaks.push_back({std::string(name) + " misaligned by one element",
                      {INVALID},
                      [member](vattn_args& a, vattn_limits&, size_t&, void*&) { a.*member = a.*member + 1; }});
  };
  misaligned("q", &vattn_args::q);
  misaligned("kv_pool", &vattn_args::kv_pool);
  misaligned("kv_draft", &vattn_args::kv_draft);
  misaligned("out", &vattn_args::out);
  auto field = [&](std::string what, std::vector<vattn_status> expected, std::function<void(vattn_args&)> f) {
    breaks.push_back(
        {std::move(what), std::move(expected), [f](vattn_args& a, vattn_limits&, size_t&, void*&) { f(a); }});
  };
  field("n_slots = -1", {INVALID}, [](vattn_args& a) { a.n_slots = -1; });
  field("n_q = 0", {INVALID}, [](vattn_args& a) { a.n_q = 0; });
  field("n_q = -1", {INVALID}, [](vattn_args& a) { a.n_q = -1; });
  field("num_requests = 0", {INVALID}, [](vattn_args& a) { a.num_requests = 0; });
  field("num_requests = -1", {INVALID}, [](vattn_args& a) { a.num_requests = -1; });
  field("sm_scale = NaN", {INVALID}, [](vattn_args& a) { a.sm_scale = NAN; });
  field("sm_scale = +inf", {INVALID}, [](vattn_args& a) { a.sm_scale = INFINITY; });
  field("sm_scale = 0", {INVALID}, [](vattn_args& a) { a.sm_scale = 0.f; });
  field("sm_scale negative", {INVALID}, [](vattn_args& a) { a.sm_scale = -a.sm_scale; });
  for (int d : {-1, 1}) {
    field("d_qk = " + std::to_string(caps.d_qk + d), {UNSUPPORTED}, [d](vattn_args& a) { a.d_qk += d; });
    field("d_v = " + std::to_string(caps.d_v + d), {UNSUPPORTED}, [d](vattn_args& a) { a.d_v += d; });
  }
  field("d_v = d_qk", {UNSUPPORTED}, [](vattn_args& a) { a.d_v = a.d_qk; });
  // Zero heads reads as a bad count or as heads not implemented; too many heads as unsupported
  // or beyond the plan (which has fewer).
  field("num_heads = 0", {INVALID, UNSUPPORTED}, [](vattn_args& a) { a.num_heads = 0; });
  field("num_heads = " + std::to_string(caps.max_heads + 1), {UNSUPPORTED, LIMITS},
        [&caps](vattn_args& a) { a.num_heads = caps.max_heads + 1; });
  if (lim.num_heads + 1 <= caps.max_heads)
    field("num_heads = plan + 1", {LIMITS}, [](vattn_args& a) { a.num_heads += 1; });
  if (lim.num_heads > 1) field("num_heads = plan - 1", {LIMITS}, [](vattn_args& a) { a.num_heads -= 1; });
  field("num_requests = plan + 1", {LIMITS}, [lim](vattn_args& a) { a.num_requests = lim.max_requests + 1; });
  field("n_q = plan + 1", {LIMITS}, [lim](vattn_args& a) { a.n_q = lim.max_total_drafts + 1; });
  // Limits outside what the revision can plan (vattn_abi.h: the limits are checked like the
  // arguments; a revision may call them invalid, beyond its limits or unsupported).
  // workspace_size(), the planning call, must refuse them as well.
  std::vector<std::pair<std::string, std::function<void(vattn_limits&)>>> plan_breaks;
  auto limit = [&](std::string what, std::function<void(vattn_limits&)> f) {
    breaks.push_back({"limits." + what,
                      {INVALID, LIMITS, UNSUPPORTED},
                      [f](vattn_args&, vattn_limits& l, size_t&, void*&) { f(l); }});
    plan_breaks.emplace_back("limits." + what, f);
  };
  limit("max_requests = 0", [](vattn_limits& l) { l.max_requests = 0; });
  limit("max_requests = caps + 1", [&caps](vattn_limits& l) { l.max_requests = caps.max_requests + 1; });
  limit("max_total_drafts = 0", [](vattn_limits& l) { l.max_total_drafts = 0; });
  limit("max_drafts_per_request = 0", [](vattn_limits& l) { l.max_drafts_per_request = 0; });
  limit("max_drafts_per_request = caps + 1",
        [&caps](vattn_limits& l) { l.max_drafts_per_request = caps.max_drafts_per_request + 1; });
  limit("max_splits = 0", [](vattn_limits& l) { l.max_splits = 0; });
  limit("max_splits = caps + 1", [&caps](vattn_limits& l) { l.max_splits = caps.max_splits + 1; });
  // The workspace: the size the revision asks for is the reference (the runner's buffer is
  // larger, so a misaligned pointer with the full size still lies inside it).
  size_t need = 0;
  if (api->workspace_size(&lim, &need) != VATTN_OK) return "workspace_size() refused the campaign's limits";
  breaks.push_back(
      {"workspace = null", {WORKSPACE}, [](vattn_args&, vattn_limits&, size_t&, void*& ws) { ws = nullptr; }});
  breaks.push_back(
      {"workspace 1 byte short", {WORKSPACE}, [need](vattn_args&, vattn_limits&, size_t& n, void*&) { n = need - 1; }});
  if (runner.workspace().bytes() >= need + 16) {
    breaks.push_back({"workspace 16 bytes past a 256-byte boundary",
                      {WORKSPACE},
                      [need](vattn_args&, vattn_limits&, size_t& n, void*& ws) {
                        ws = static_cast<char*>(ws) + 16;
                        n = need;
                      }});
  }

  for (const auto& [what, f] : plan_breaks) {
    vattn_limits l = lim;
    f(l);
    size_t n = 0;
    const vattn_status got = api->workspace_size(&l, &n);
    if (got == VATTN_OK)
      return "workspace_size() with " + what + " returned " + status_name(api, got) + " (" + std::to_string(n) +
             " bytes), expected a refusal";
  }

  DeviceBuffer& wsb = runner.workspace();
  dc.poison_outputs();
  wsb.poison();
  const vattn_args good = dc.kernel_args();
  for (const Break& b : breaks) {
    vattn_args a = good;
    vattn_limits l = lim;
    size_t ws_bytes = wsb.bytes();
    void* ws = wsb.data();
    b.apply(a, l, ws_bytes, ws);
    const vattn_status got = api->run(&a, &l, ws, ws_bytes, nullptr);
    bool ok = false;
    for (vattn_status e : b.expected) ok |= got == e;
    if (!ok) {
      VATTN_CUDA(cudaDeviceSynchronize());  // whatever it enqueued must not outlive the case
      std::string want;
      for (vattn_status e : b.expected) want += (want.empty() ? "" : " or ") + status_name(api, e);
      return "run() with " + b.what + " returned " + status_name(api, got) + ", expected " + want;
    }
  }
  VATTN_CUDA(cudaDeviceSynchronize());
  VATTN_CUDA(cudaGetLastError());
  // Refused calls enqueue nothing: outputs and the workspace's header (its error and split
  // words; the partials behind it can be gigabytes at a campaign's limits) still hold the poison.
  for (DeviceBuffer* b : {&dc.out, &dc.lse, &wsb}) {
    std::vector<unsigned char> bytes(b == &wsb ? std::min<size_t>(b->bytes(), 256) : b->bytes());
    b->download(bytes.data(), bytes.size());
    if (!all_bytes(bytes, 0xFF)) return "a refused run() wrote '" + b->name() + "' (it must enqueue nothing)";
  }
  return "";
}

}  // namespace vattn::testbed
