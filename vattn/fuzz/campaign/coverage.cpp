// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/campaign/coverage.h"

#include <sstream>

#include "kernels/vattn_abi.h"

namespace vattn::fuzz {

void Coverage::add(const StreamCase& c, uint32_t device_error) {
  const Recipe& r = c.recipe;
  ++counts_["P (largest P_b)"][prefix_bucket(r)];
  ++counts_["T (largest T_b)"][draft_bucket(r)];
  ++counts_["H"][std::to_string(r.heads)];
  ++counts_["B"][batch_bucket(r)];
  ++counts_["tree"][r.tree];
  ++counts_["profile"][r.profile];
  ++counts_["layout"][r.layout];
  ++counts_["splits"][split_class(r)];
  ++counts_["pool"][pool_class(r)];
  ++counts_["fault"][r.fault];
  ++counts_["family"][c.family];
  ++counts_["plan limits"][limits_class(r)];
  ++counts_["max_splits"][max_splits_class(r)];
  ++counts_["SMs"][sm_class(r)];
  if (device_error != 0) {
    static const std::pair<uint32_t, const char*> kBits[] = {{VATTN_DEVERR_INDPTR, "INDPTR"},
                                                             {VATTN_DEVERR_LIMITS, "LIMITS"},
                                                             {VATTN_DEVERR_KV_INDEX, "KV_INDEX"},
                                                             {VATTN_DEVERR_SPLITS, "SPLITS"},
                                                             {VATTN_DEVERR_MASK, "MASK"}};
    for (const auto& [bit, name] : kBits)
      if (device_error & bit) ++counts_["device-error paths"][name];
  }
}

json Coverage::to_json() const {
  json j = json::object();
  for (const auto& [dim, buckets] : counts_) j[dim] = buckets;
  return j;
}

std::string Coverage::text() const {
  std::ostringstream os;
  for (const auto& [dim, buckets] : counts_) {
    os << "  " << dim << ":";
    bool first = true;
    for (const auto& [bucket, n] : buckets) {
      os << (first ? " " : ", ") << bucket << " " << n;
      first = false;
    }
    os << "\n";
  }
  if (counts_.find("device-error paths") == counts_.end()) os << "  device-error paths: none hit\n";
  return os.str();
}

}  // namespace vattn::fuzz
