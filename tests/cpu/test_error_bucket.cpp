// SPDX-License-Identifier: Apache-2.0
// The error bucket (vattn/check/error_bucket.h): where a failed comparison's errors sit, reduced to
// the key that tells the fuzzer's findings of one check apart. Planted bugs on hand-built cases:
// a bug keeps its key across shapes (batch size, draft counts, prefixes, head count), and bugs
// that hit different places get different keys.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tests/cpu/hand_case.h"
#include "vattn/case/case.h"
#include "vattn/check/error_bucket.h"
#include "vattn/check/tolerance.h"
#include "vattn/oracle/cpu_oracle.h"

namespace {

using vattn::Case;
using vattn::CompareReport;
using vattn::Reference;
using Req = vattn::test::HandRequest;
using vattn::test::chain_parents;

constexpr int kDqk = 176, kDv = 160;  // three 64-column blocks of d_v, the last one partial

Case build(int H, const std::vector<Req>& reqs, uint64_t seed) {
  return vattn::test::hand_case("bucket_case", H, kDqk, kDv, reqs, seed, 4, 1.0f);
}

// The shapes one bug is hit on: one request of one row, one request of a chain, a batch with
// prefixes on and off tile edges and a branching tree.
std::vector<Case> shapes(int H) {
  return {build(H, {{0, {-1}}}, 1), build(H, {{77, chain_parents(5)}}, 2),
          build(H, {{33, chain_parents(3)}, {0, {-1, 0, 0, 1}}, {129, chain_parents(2)}}, 3),
          build(H, {{64, {-1, 0, 0, 1, 1}}, {5, chain_parents(1)}}, 4)};
}

// Element (b, i, h, d) of out.
size_t at(const Case& c, int b, int i, int h, int d) {
  return ((static_cast<size_t>(c.qo_indptr[static_cast<size_t>(b)] + i) * static_cast<size_t>(c.num_heads) +
           static_cast<size_t>(h)) *
          static_cast<size_t>(c.d_v)) +
         static_cast<size_t>(d);
}

// A planted bug: moves element (b, i, h, d) when `hit` says so.
using Bug = std::function<bool(const Case& c, int b, int i, int h, int d)>;

struct Judged {
  CompareReport report;
  std::string bucket;
};

// The bf16-emulating reference (a correct result) with the bug's elements moved by `by`.
Judged judge(const Case& c, const Bug& hit, float by = 0.5f) {
  const Reference r64 = vattn::oracle_fp64(c), r16 = vattn::reference_bf16_emulated(c);
  std::vector<float> out(r16.out.begin(), r16.out.end()), lse(r16.lse.begin(), r16.lse.end());
  for (int b = 0; b < c.num_requests(); ++b)
    for (int i = 0; i < c.drafts(b); ++i)
      for (int h = 0; h < c.num_heads; ++h)
        for (int d = 0; d < c.d_v; ++d)
          if (hit(c, b, i, h, d)) out[at(c, b, i, h, d)] += by;
  Judged j;
  j.report = vattn::compare(c, r64, r16, out, lse, "planted");
  j.bucket = vattn::error_bucket(c, r64.out, j.report);
  return j;
}

const Bug kLastHead = [](const Case& c, int, int, int h, int) { return h == c.num_heads - 1; };
const Bug kFirstRequest = [](const Case&, int b, int, int, int) { return b == 0; };
const Bug kLastDraft = [](const Case& c, int b, int i, int, int) { return i == c.drafts(b) - 1; };
const Bug kSecondBlock = [](const Case&, int, int, int, int d) { return d >= 64 && d < 128; };

}  // namespace

TEST_CASE("error bucket: a correct result has none", "[bucket]") {
  const Case c = shapes(3)[2];
  const Judged j = judge(c, [](const Case&, int, int, int, int) { return false; });
  CHECK(j.report.pass);
  CHECK(j.bucket.empty());
}

TEST_CASE("error bucket: one bug keeps its key on every shape, two bugs get two keys", "[bucket]") {
  for (const Case& c : shapes(3)) {
    INFO("requests " << c.num_requests() << ", rows " << c.n_q());
    const Judged head = judge(c, kLastHead), request = judge(c, kFirstRequest);
    INFO(head.report.detail() << request.report.detail());
    CHECK(head.bucket == "values heads=some rows=whole-requests cols=all");
    // One request of several, or the only one: the same class (B = 1 cannot tell them apart).
    CHECK(request.bucket == "values heads=all rows=whole-requests cols=all");
  }
  for (const Case& c : shapes(8)) CHECK(judge(c, kLastHead).bucket == "values heads=some rows=whole-requests cols=all");
}

TEST_CASE("error bucket: both bugs in one case land in the bucket of the wider one", "[bucket]") {
  // Every head of request 0 and the last head everywhere: all heads, whole requests. The campaign
  // files such a case under the request bug's bucket, and its shrinking drops the head bug.
  const Case c = shapes(3)[2];
  const Judged both = judge(c, [](const Case& k, int b, int i, int h, int d) {
    return kLastHead(k, b, i, h, d) || kFirstRequest(k, b, i, h, d);
  });
  CHECK(both.bucket == judge(c, kFirstRequest).bucket);
  CHECK(both.bucket != judge(c, kLastHead).bucket);
}

TEST_CASE("error bucket: with one head, a head bug is every head", "[bucket]") {
  CHECK(judge(shapes(1)[1], kLastHead).bucket == "values heads=all rows=whole-requests cols=all");
}

TEST_CASE("error bucket: last draft rows, some rows and column blocks", "[bucket]") {
  const Case chain = shapes(3)[1], batch = shapes(3)[2];
  CHECK(judge(chain, kLastDraft).bucket == "values heads=all rows=last-drafts cols=all");
  CHECK(judge(batch, kLastDraft).bucket == "values heads=all rows=last-drafts cols=all");
  // A request of one row: its last draft is the whole request.
  CHECK(judge(shapes(3)[0], kLastDraft).bucket == "values heads=all rows=whole-requests cols=all");
  CHECK(judge(chain, [](const Case&, int, int i, int, int) { return i == 1; }).bucket ==
        "values heads=all rows=some-rows cols=all");
  CHECK(judge(batch, kSecondBlock).bucket == "values heads=all rows=whole-requests cols=some");
  CHECK(judge(batch, [](const Case&, int, int, int h, int d) { return h == 0 && d == 150; }).bucket ==
        "values heads=some rows=whole-requests cols=some");
}

TEST_CASE("error bucket: NaN where the oracle is finite, and lse alone", "[bucket]") {
  const Case c = shapes(3)[2];
  const Judged nan = judge(c, kLastDraft, std::numeric_limits<float>::quiet_NaN());
  CHECK(nan.report.nonfinite_mismatch > 0);
  CHECK(nan.bucket == "nonfinite heads=all rows=last-drafts cols=all");

  const Reference r64 = vattn::oracle_fp64(c), r16 = vattn::reference_bf16_emulated(c);
  std::vector<float> out(r16.out.begin(), r16.out.end()), lse(r16.lse.begin(), r16.lse.end());
  const size_t row = static_cast<size_t>(c.qo_indptr[1]) * static_cast<size_t>(c.num_heads) + 2;  // request 1, head 2
  lse[row] += 0.5f;
  CompareReport r = vattn::compare(c, r64, r16, out, lse, "lse moved");
  INFO(r.detail());
  CHECK(vattn::error_bucket(c, r64.out, r) == "lse heads=some rows=some-rows");
  lse[row] = -std::numeric_limits<float>::infinity();  // -inf where keys are visible: a class mismatch
  r = vattn::compare(c, r64, r16, out, lse, "lse -inf");
  CHECK(vattn::error_bucket(c, r64.out, r) == "nonfinite heads=some rows=some-rows");
}

TEST_CASE("error bucket: failures with no element over bound have the kind alone", "[bucket]") {
  const Case c = shapes(3)[0];
  CompareReport r;
  r.pass = false;
  r.failures = {"score: 3e-05 > 2e-05"};
  CHECK(vattn::error_bucket(c, {}, r) == "aggregate");
  r.failures = {"ratio: rms error 0.01 is 3x the bf16 reference's"};
  CHECK(vattn::error_bucket(c, {}, r) == "aggregate");
  r.failures = {"ref_norm: the oracle output is all zero"};
  CHECK(vattn::error_bucket(c, {}, r) == "vacuous");
}

TEST_CASE("error bucket: rows whose oracle output is all NaN do not keep a request from being whole", "[bucket]") {
  const Case c = shapes(3)[1];
  Reference r64 = vattn::oracle_fp64(c);
  const Reference r16 = vattn::reference_bf16_emulated(c);
  std::vector<float> out(r16.out.begin(), r16.out.end()), lse(r16.lse.begin(), r16.lse.end());
  // Draft 2's oracle output is NaN (as a non-finite input it reads would make it), and the
  // result agrees there; every other row of the request is wrong in the last head.
  for (int h = 0; h < c.num_heads; ++h)
    for (int d = 0; d < c.d_v; ++d) {
      r64.out[at(c, 0, 2, h, d)] = std::nan("");
      out[at(c, 0, 2, h, d)] = std::nanf("");
    }
  for (int i = 0; i < c.drafts(0); ++i)
    if (i != 2)
      for (int d = 0; d < c.d_v; ++d) out[at(c, 0, i, c.num_heads - 1, d)] += 0.5f;
  const CompareReport r = vattn::compare(c, r64, r16, out, lse, "nan row");
  CHECK(vattn::error_bucket(c, r64.out, r) == "values heads=some rows=whole-requests cols=all");
}
