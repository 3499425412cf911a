// SPDX-License-Identifier: Apache-2.0
// Small helpers of the supervisor and of `vattn fuzz --recipe`: clocks and times, the GPUs a
// worker may use (found without CUDA), a CUDA error's name as a finding's check, resource retries.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace vattn::fuzz::supervisor_detail {

using Clock = std::chrono::steady_clock;

inline double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string utc_now();      // 2024-01-31T12:00:00Z
std::string hms(double s);  // 01:02:03

inline bool is_host_target(const std::string& kernel) { return kernel.rfind("host:", 0) == 0; }

// A case that fails for want of a resource is retried this many times on a fresh worker, after
// kResourceBackoffS, then twice that, before it is journaled as not run (docs/reports.md).
constexpr int kResourceRetries = 2;
constexpr double kResourceBackoffS = 0.5;

// A CUDA error names itself (cudaErrorIllegalAddress ...): that, not the file and line in the
// message, is what identifies the bug.
std::string cuda_error_check(const std::string& what);

// GPUs the workers may use, found without CUDA: CUDA_VISIBLE_DEVICES when set, else the
// driver's /proc entries, else `nvidia-smi -L`.
std::vector<std::string> visible_gpus();

}  // namespace vattn::fuzz::supervisor_detail
