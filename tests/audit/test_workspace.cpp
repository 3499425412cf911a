// SPDX-License-Identifier: Apache-2.0
// Host-only, no GPU needed: split-v2 runs decode batches with split-v1 on the caller's
// workspace, so the size it asks for must cover split-v1's at every plan limit.
#include <catch2/catch.hpp>

#include "vattn_abi.h"

extern "C" const vattn_revision* vattn_revision_split_v1(void);
extern "C" const vattn_revision* vattn_revision_split_v2(void);

TEST_CASE("split-v2's workspace covers split-v1's (its decode path) at every plan limit", "[audit][workspace]") {
  int checked = 0;
  for (int requests : {1, 7, 64, 1024})
    for (int64_t drafts : {int64_t{1}, int64_t{64}, int64_t{4096}})
      for (int heads : {1, 8, 32, 128})
        for (int splits : {1, 16, 256}) {
          vattn_limits lim{};
          lim.max_requests = requests;
          lim.max_total_drafts = drafts < requests ? requests : drafts;
          lim.max_drafts_per_request = 64;
          lim.num_heads = heads;
          lim.max_splits = splits;
          size_t v1 = 0, v2 = 0;
          REQUIRE(vattn_revision_split_v1()->workspace_size(&lim, &v1) == VATTN_OK);
          REQUIRE(vattn_revision_split_v2()->workspace_size(&lim, &v2) == VATTN_OK);
          INFO("requests " << requests << " drafts " << lim.max_total_drafts << " heads " << heads << " splits " << splits);
          REQUIRE(v2 >= v1);
          ++checked;
        }
  REQUIRE(checked == 4 * 3 * 4 * 3);
}
