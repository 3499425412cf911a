// SPDX-License-Identifier: Apache-2.0
// Driver of the graph checks, and the two that look at the capture itself.
#include "vattn/gpu/graph_check.h"

#include <algorithm>
#include <cstdio>
#include <exception>

#include <cuda_runtime.h>

#include "vattn/gpu/graph_check_internal.h"
#include "vattn/gpu/graph_schedule.h"

namespace vattn {

SlotShape graph_check_shape(const Revision& rev, const GraphCheckOptions& opt) {
  vattn_caps caps{};
  const bool have_caps = rev.api->capabilities && rev.api->capabilities(&caps) == VATTN_OK;
  auto cap = [have_caps](int want, int64_t limit) {
    return static_cast<int>(have_caps && limit >= 1 ? std::min<int64_t>(want, limit) : want);
  };
  SlotShape s;
  s.limits.max_requests = cap(opt.requests, caps.max_requests);
  s.limits.num_heads = cap(opt.heads, caps.max_heads);
  s.limits.max_drafts_per_request = cap(opt.max_drafts, caps.max_drafts_per_request);
  s.limits.max_total_drafts = std::max(opt.total_drafts, s.limits.max_requests);
  s.limits.max_splits = cap(opt.max_splits, caps.max_splits);
  s.max_prefix = cap(opt.max_prefix, caps.max_prefix);
  s.max_mask_drafts = s.limits.max_drafts_per_request + 1;  // room for the over-the-limit replay
  s.sm_scale = Recipe().sm_scale;
  return s;
}

namespace graph_check {

CheckResult check_capture(Env& env) {
  CheckResult r{"capture", false, ""};
  GraphSlot& slot = *env.slot;
  // Captured with short sequences: whatever a revision freezes at capture time is small.
  slot.load(generate_case(capture_recipe(env.shape, env.opt.seed), "capture"));
  slot.set_forced_splits(0);
  env.capture = slot.capture();
  if (!env.capture.ok) {
    r.detail = env.capture.problem;
    return r;
  }
  try {
    env.exec.instantiate(env.capture.graph);
  } catch (const CudaError& e) {
    (void)cudaGetLastError();
    r.detail = std::string("captured, but the graph does not instantiate: ") + e.what();
    return r;
  }
  size_t nodes = 0;
  VATTN_CUDA(cudaGraphGetNodes(env.capture.graph.get(), nullptr, &nodes));
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.2f", env.capture.host_ms);
  r.pass = true;
  r.detail = "captured in cudaStreamCaptureModeGlobal on a non-blocking stream, " + std::to_string(nodes) +
             " nodes, instantiated (run() took " + ms + " ms on the host)";
  return r;
}

namespace {

std::string kernel_node_text(cudaGraphNode_t node) {
  cudaKernelNodeParams p{};
  // A library revision's kernels belong to its own runtime; if this runtime cannot describe
  // them, the type alone is printed.
  if (cudaGraphKernelNodeGetParams(node, &p) != cudaSuccess) {
    (void)cudaGetLastError();
    return "kernel";
  }
  char buf[96];
  std::snprintf(buf, sizeof buf, "kernel<<<(%u,%u,%u), %u, %u B>>>", p.gridDim.x, p.gridDim.y, p.gridDim.z,
                p.blockDim.x * p.blockDim.y * p.blockDim.z, p.sharedMemBytes);
  return buf;
}

}  // namespace

CheckResult check_node_audit(Env& env) {
  CheckResult r{"node-audit", false, ""};
  if (!env.capture.ok || !env.capture.graph.get()) {
    r.detail = "no graph to audit: the capture failed (" + env.capture.problem + ")";
    return r;
  }
  size_t n = 0;
  VATTN_CUDA(cudaGraphGetNodes(env.capture.graph.get(), nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  if (n) VATTN_CUDA(cudaGraphGetNodes(env.capture.graph.get(), nodes.data(), &n));
  std::string list, unexpected;
  int kernels = 0, memsets = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType t{};
    VATTN_CUDA(cudaGraphNodeGetType(node, &t));
    const std::string name = t == cudaGraphNodeTypeKernel ? kernel_node_text(node) : graph_node_type_name(t);
    list += (list.empty() ? "" : ", ") + name;
    if (t == cudaGraphNodeTypeKernel) {
      ++kernels;
    } else if (t == cudaGraphNodeTypeMemset) {
      ++memsets;
    } else {
      unexpected += (unexpected.empty() ? "" : ", ") + name;
    }
  }
  const std::string nodes_text = std::to_string(n) + " nodes: " + (list.empty() ? "none" : list);
  if (!unexpected.empty()) {
    r.detail = "node types other than kernel/memset in the graph (" + unexpected +
               "): run() records copies, host callbacks, allocations or events; " + nodes_text;
  } else if (memsets > env.declared_memsets) {
    r.detail = std::to_string(memsets) + " memset nodes but the revision declares " +
               std::to_string(env.declared_memsets) + " (caps.declared_memset_nodes); " + nodes_text;
  } else if (kernels == 0) {
    r.detail = "the graph holds no kernel: run() enqueued nothing on the capturing stream; " + nodes_text;
  } else {
    r.pass = true;
    r.detail = nodes_text;
  }
  return r;
}

namespace {

using CheckFn = CheckResult (*)(Env&);

const std::pair<const char*, CheckFn> kChecks[] = {
    {"capture", check_capture},         {"node-audit", check_node_audit},
    {"replay", check_replay},           {"two-graphs", check_two_graphs},
    {"memory", check_memory},           {"non-blocking", check_non_blocking},
    {"limits-host", check_limits_host}, {"limits-device", check_limits_device},
};

}  // namespace
}  // namespace graph_check

std::vector<CheckResult> run_graph_checks(const Revision& rev, const GraphCheckOptions& opt) {
  using namespace graph_check;
  std::vector<CheckResult> results;
  Env env;
  env.rev = rev;
  env.opt = opt;
  std::string setup_problem;
  try {
    env.shape = graph_check_shape(rev, opt);
    vattn_caps caps{};
    if (rev.api->capabilities && rev.api->capabilities(&caps) == VATTN_OK)
      env.declared_memsets = caps.declared_memset_nodes;
    env.slot = std::make_unique<GraphSlot>(rev, env.shape, "slot-a");
  } catch (const std::exception& e) {
    setup_problem = std::string("setup failed: ") + e.what();
  }
  for (const auto& [name, fn] : kChecks) {
    if (opt.progress) {
      std::fprintf(opt.progress, "graph-check: running %s\n", name);
      std::fflush(opt.progress);
    }
    if (!setup_problem.empty()) {
      results.push_back({name, false, setup_problem});
      continue;
    }
    try {
      results.push_back(fn(env));
    } catch (const std::exception& e) {
      // A fault leaves the context unusable; later checks will say so in turn.
      (void)cudaGetLastError();
      results.push_back({name, false, std::string("error: ") + e.what()});
    }
  }
  return results;
}

}  // namespace vattn
