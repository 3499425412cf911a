// SPDX-License-Identifier: Apache-2.0
#include "vattn/casefile/h5_group.h"

#include <algorithm>

#include "vattn/casefile/h5_dataset.h"

namespace vattn::h5 {

namespace {

herr_t collect_name(hid_t, const char* name, const H5L_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}

}  // namespace

Group open_group(hid_t loc, const char* name, const std::string& what, const Where& w) {
  if (!has_link(loc, name, w)) w.read_error("missing " + what);
  Object obj(H5Oopen(loc, name, H5P_DEFAULT));
  if (!obj.valid()) w.read_error_h5("cannot open " + what);
  if (H5Iget_type(obj.get()) != H5I_GROUP) w.read_error(what + " is not a group");
  return Group(obj.release());
}

std::vector<std::string> member_names(hid_t group, const Where& w) {
  std::vector<std::string> names;
  if (H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_name, &names) < 0) {
    w.read_error_h5("cannot list the group's members");
  }
  std::sort(names.begin(), names.end());  // the index order is already bytewise; this states the contract
  return names;
}

H5I_type_t member_kind(hid_t group, const char* name, const Where& w) {
  require_hard_link(group, name, w);
  Object obj(H5Oopen(group, name, H5P_DEFAULT));
  if (!obj.valid()) w.read_error_h5(std::string("cannot open '") + name + "'");
  return H5Iget_type(obj.get());
}

Group create_group(hid_t loc, const char* name, const Where& w) {
  Plist gcpl = untimed_create_plist(H5P_GROUP_CREATE, w);
  Group g(H5Gcreate2(loc, name, H5P_DEFAULT, gcpl.get(), H5P_DEFAULT));
  if (!g.valid()) w.write_error_h5(std::string("cannot create group '") + name + "'");
  return g;
}

}  // namespace vattn::h5
