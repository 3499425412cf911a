// SPDX-License-Identifier: Apache-2.0
// A resource the suite asked for itself was not there: device memory for a case's inputs,
// outputs, workspace or the oracle's scratch, host memory, file descriptors, disk space. Raised
// where the suite allocates (vattn/gpu/cuda_check.h's VATTN_CUDA_ALLOC), never for a failure of
// the code under test: a kernel's own launch error stays a CUDA error, and the fuzz supervisor
// takes it for a crash. The fuzz worker reports this as the verdict "resource"; the supervisor
// retries the case on a fresh worker and never raises it as a finding (docs/reports.md).
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace vattn {

class ResourceError : public std::runtime_error {
 public:
  // resource: what ran short ("device memory", "host memory", "file descriptors", "disk space");
  // what: the call that failed, and where.
  ResourceError(std::string resource, const std::string& what)
      : std::runtime_error(what), resource_(std::move(resource)) {}
  const std::string& resource() const { return resource_; }

 private:
  std::string resource_;
};

}  // namespace vattn
