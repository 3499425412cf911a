// SPDX-License-Identifier: Apache-2.0
// The argument-contract property (Property::kArgumentContract; the fuzz worker samples it): run()
// with one host-known argument broken must refuse with the status vattn_abi.h gives for it (a
// null pointer, a negative or zero count, a bad scale: INVALID_ARGUMENT; dims or heads it does not implement:
// UNSUPPORTED; a count beyond the plan: LIMITS; a workspace null, too small or not 256-byte
// aligned: WORKSPACE; limits the revision cannot plan: any of INVALID, LIMITS, UNSUPPORTED, and
// workspace_size() must refuse those limits too), and
// must enqueue nothing: the poisoned outputs and workspace come out untouched. The property
// suites test a few of these once; here every sampled case of a campaign tries them all.
#pragma once

#include <string>

#include "vattn/gpu/device_case.h"
#include "vattn/gpu/kernel_runner.h"

namespace vattn::testbed {

// "" when every broken call was refused as it should be, else the first one that was not.
// Leaves the case's outputs and the runner's workspace poisoned.
std::string argument_contract_problem(KernelRunner& runner, DeviceCase& dc);

}  // namespace vattn::testbed
