// SPDX-License-Identifier: Apache-2.0
// What the ABI promises beyond numbers: bitwise determinism, host-side refusals with an
// error code, device-side refusals through the workspace error word with NaN outputs.
#include <cmath>
#include <cstring>
#include <functional>

#include <catch2/catch.hpp>

#include "tests/gpu/gpu_testbed.h"

using namespace vattn;

namespace {
bool all_nan(const std::vector<float>& v, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i)
    if (!std::isnan(v[i])) return false;
  return true;
}
}  // namespace

TEST_CASE("same inputs and split count give bitwise the same output", "[gpu][kernel][determinism]") {
  const Case c =
      test::make_case("B=2 H=8 P=[4099,70] T=[64,17] tree=random profile=k26 layout=scattered poison=1 seed=71");
  DeviceCase dc(c);
  KernelRunner runner(load_revision(test::revision_under_test()), limits_for(c, 16));
  for (int splits : {0, 1, 5, 16}) {
    const RunResult first = runner.run(dc, splits);
    REQUIRE(first.ok());
    for (int rep = 0; rep < 3; ++rep) {
      const RunResult again = runner.run(dc, splits);
      REQUIRE(again.ok());
      REQUIRE(std::memcmp(first.out.data(), again.out.data(), first.out.size() * sizeof(float)) == 0);
      REQUIRE(std::memcmp(first.lse.data(), again.lse.data(), first.lse.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("host-known problems are refused with an error code, nothing enqueued", "[gpu][kernel][refuse]") {
  const Case c =
      test::make_case("B=2 H=8 P=[40,7] T=[3,5] tree=chain profile=uniform layout=scattered poison=0 seed=72");
  DeviceCase dc(c);
  Revision rev = load_revision(test::revision_under_test());
  vattn_limits lim = limits_for(c, 4);
  KernelRunner runner(rev, lim);
  vattn_args a = dc.kernel_args();
  auto run_with = [&](vattn_args x, const vattn_limits& l, size_t ws_bytes) {
    return rev.api->run(&x, &l, runner.workspace().data(), ws_bytes, nullptr);
  };
  const size_t ws = runner.workspace().bytes();
  REQUIRE(run_with(a, lim, ws) == VATTN_OK);
  // The call with one argument broken (the others valid): the status run() gives it.
  auto with = [&](const std::function<void(vattn_args&)>& breaks) {
    vattn_args bad = a;
    breaks(bad);
    return run_with(bad, lim, ws);
  };
  CHECK(with([](vattn_args& x) { x.q = nullptr; }) == VATTN_ERR_INVALID_ARGUMENT);
  CHECK(with([](vattn_args& x) { x.sm_scale = NAN; }) == VATTN_ERR_INVALID_ARGUMENT);
  // bf16 tensors one element (2 bytes) off their 16-byte alignment (docs/verify-attention.md).
  CHECK(with([](vattn_args& x) { x.q += 1; }) == VATTN_ERR_INVALID_ARGUMENT);
  CHECK(with([](vattn_args& x) { x.out += 1; }) == VATTN_ERR_INVALID_ARGUMENT);
  CHECK(with([](vattn_args& x) { x.d_qk = 512; }) == VATTN_ERR_UNSUPPORTED);
  CHECK(with([&lim](vattn_args& x) { x.n_q = lim.max_total_drafts + 1; }) == VATTN_ERR_LIMITS);
  CHECK(with([&lim](vattn_args& x) { x.num_requests = lim.max_requests + 1; }) == VATTN_ERR_LIMITS);
  size_t need = 0;
  REQUIRE(rev.api->workspace_size(&lim, &need) == VATTN_OK);
  REQUIRE(need <= ws);
  CHECK(run_with(a, lim, need - 1) == VATTN_ERR_WORKSPACE);
  // Limits it cannot plan: refused by workspace_size() and by run().
  vattn_limits zero = lim;
  zero.max_requests = 0;
  size_t n = 0;
  CHECK(rev.api->workspace_size(&zero, &n) != VATTN_OK);
  CHECK(run_with(a, zero, ws) != VATTN_OK);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
}

TEST_CASE("device-only problems set the error word and poison the rows with NaN", "[gpu][kernel][refuse]") {
  Case c = test::make_case("B=2 H=8 P=[40,7] T=[3,5] tree=chain profile=uniform layout=scattered poison=0 seed=73");
  const size_t row_elems = static_cast<size_t>(c.num_heads) * c.d_v;

  SECTION("a kv index outside the pool: that request's rows are NaN") {
    Case bad = c;
    bad.kv_indices[bad.kv_indptr[1] + 2] = static_cast<int32_t>(bad.n_rows()) + 5;  // request 1
    DeviceCase dc(bad);
    KernelRunner runner(load_revision(test::revision_under_test()), limits_for(bad, 4));
    for (int splits : {1, 3}) {
      const RunResult r = runner.run(dc, splits);
      CHECK(r.status == VATTN_OK);
      CHECK((r.device_error & VATTN_DEVERR_KV_INDEX) != 0);
      CHECK(all_nan(r.out, row_elems * bad.qo_indptr[1], r.out.size()));
      CHECK(!std::isnan(r.out[0]));  // request 0 untouched by request 1's bad index
    }
  }
  SECTION("a decreasing indptr: everything is NaN") {
    Case bad = c;
    bad.kv_indptr[1] = 50;  // > kv_indptr[2] = 47
    DeviceCase dc(bad);
    KernelRunner runner(load_revision(test::revision_under_test()), limits_for(c, 4));
    const RunResult r = runner.run(dc, 2);
    CHECK((r.device_error & VATTN_DEVERR_INDPTR) != 0);
    CHECK(all_nan(r.out, 0, r.out.size()));
    CHECK(all_nan(r.lse, 0, r.lse.size()));
  }
  SECTION("a draft count over the plan limit") {
    DeviceCase dc(c);
    vattn_limits lim = limits_for(c, 4);
    lim.max_drafts_per_request = 4;  // request 1 has 5
    KernelRunner runner(load_revision(test::revision_under_test()), lim);
    const RunResult r = runner.run(dc, 0);
    CHECK((r.device_error & VATTN_DEVERR_LIMITS) != 0);
    CHECK(all_nan(r.out, 0, r.out.size()));
  }
  SECTION("a forced split count over the plan limit") {
    DeviceCase dc(c);
    KernelRunner runner(load_revision(test::revision_under_test()), limits_for(c, 4));
    const RunResult r = runner.run(dc, 5);
    CHECK((r.device_error & VATTN_DEVERR_SPLITS) != 0);
    CHECK(all_nan(r.out, 0, r.out.size()));
  }
}

TEST_CASE("a forced split count takes effect (workspace word 1)", "[gpu][kernel][splits]") {
  const Case c =
      test::make_case("B=2 H=8 P=[300,5] T=[16,3] tree=random profile=uniform layout=scattered poison=0 seed=74");
  DeviceCase dc(c);
  KernelRunner runner(load_revision(test::revision_under_test()), limits_for(c, 32));
  for (int splits : {1, 2, 7, 32}) {
    const RunResult r = runner.run(dc, splits);
    REQUIRE(r.ok());
    INFO("forced " << splits << ", used " << r.splits_used);
    CHECK(r.splits_used == static_cast<uint32_t>(splits));
  }
  const RunResult chosen = runner.run(dc, 0);
  REQUIRE(chosen.ok());
  CHECK(chosen.splits_used >= 1);
  CHECK(chosen.splits_used <= 32);
}
