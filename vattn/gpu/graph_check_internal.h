// SPDX-License-Identifier: Apache-2.0
// Pieces shared by the graph-check source files (not part of the public interface).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "vattn/gpu/graph_check.h"

namespace vattn::graph_check {

// What the checks share: the revision, the shape, slot A and its captured graph.
struct Env {
  Revision rev;
  GraphCheckOptions opt;
  SlotShape shape;
  int declared_memsets = 0;
  std::unique_ptr<GraphSlot> slot;
  Capture capture;
  GraphExec exec;
  bool has_graph() const { return exec.ready(); }
  std::string no_graph() const { return "no graph to replay: the capture failed (" + capture.problem + ")"; }
};

// What one run (replay or eager) left behind.
struct Outcome {
  vattn_status status = VATTN_OK;
  uint32_t error_word = 0;
  RawOutputs raw;
  std::vector<std::string> guards;
};

std::string hex(uint32_t v);
bool bf16_is_nan(uint16_t bits);
bool f32_is_nan(uint32_t bits);

// Reads back what the last launch on the slot's stream left (waits for it first).
Outcome collect(GraphSlot& slot);
// Poisons outputs and workspace, then launches the graph on `stream` (no wait).
void launch_graph(GraphSlot& slot, const GraphExec& exec, cudaStream_t stream);
// Poisons, calls run() on the slot's stream with the slot's frozen arguments, collects.
Outcome run_eager(GraphSlot& slot);
// "" when both are clean and bitwise equal; else what differs, with rows named by request.
std::string compare(const Outcome& replay, const Outcome& eager, const GraphSlot& slot, const vattn_revision* api);
// load, set splits, replay, eager, compare.
std::string replay_and_compare(GraphSlot& slot, const GraphExec& exec, const Case& c, int splits);

CheckResult check_capture(Env& env);
CheckResult check_node_audit(Env& env);
CheckResult check_replay(Env& env);
CheckResult check_two_graphs(Env& env);
CheckResult check_memory(Env& env);
CheckResult check_non_blocking(Env& env);
CheckResult check_limits_host(Env& env);
CheckResult check_limits_device(Env& env);

}  // namespace vattn::graph_check
