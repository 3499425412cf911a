// SPDX-License-Identifier: Apache-2.0
// Groups: opening one that must be a group, listing its members in name order, creating one.
#pragma once

#include <hdf5.h>

#include <string>
#include <vector>

#include "vattn/casefile/h5_error.h"
#include "vattn/casefile/h5_handle.h"

namespace vattn::h5 {

// `what` names the group in messages, e.g. "group '/cases'".
Group open_group(hid_t loc, const char* name, const std::string& what, const Where& w);
// Member names, sorted bytewise (HDF5's name index order).
std::vector<std::string> member_names(hid_t group, const Where& w);
// Kind of a member, for messages and checks: H5I_GROUP, H5I_DATASET, ...
H5I_type_t member_kind(hid_t group, const char* name, const Where& w);
// Created without timestamps, like datasets.
Group create_group(hid_t loc, const char* name, const Where& w);

}  // namespace vattn::h5
