// SPDX-License-Identifier: Apache-2.0
// The wait-and-retry policy the GPU tests use when another process holds the device's memory
// (vattn/gpu/transient_retry.h), with a fake step and a fake clock.
#include <catch2/catch.hpp>

#include <chrono>
#include <utility>
#include <vector>

#include "vattn/gpu/transient_retry.h"

using std::chrono::milliseconds;

namespace {
enum class St { ok, transient, other };

struct Fake {
  explicit Fake(std::vector<St> r) : results(std::move(r)) {}
  std::vector<St> results;  // what each attempt returns (the last one repeats)
  int attempts = 0;
  std::vector<long long> waits, waited_before;
  St attempt() {
    const St s = results[std::min<size_t>(attempts, results.size() - 1)];
    ++attempts;
    return s;
  }
  St run(const vattn::RetryWaits& w) {
    return vattn::retry_transient(
        St::transient, w, [&] { return attempt(); },
        [&](milliseconds d, milliseconds waited) {
          waits.push_back(d.count());
          waited_before.push_back(waited.count());
        });
  }
};

vattn::RetryWaits waits(long long first, long long most, long long budget) {
  vattn::RetryWaits w;
  w.first = milliseconds(first);
  w.most = milliseconds(most);
  w.budget = milliseconds(budget);
  return w;
}
}  // namespace

TEST_CASE("transient retry: a step that recovers is retried with doubling waits", "[retry]") {
  Fake f{{St::transient, St::transient, St::ok}};
  CHECK(f.run(waits(250, 4000, 120000)) == St::ok);
  CHECK(f.attempts == 3);
  CHECK(f.waits == std::vector<long long>{250, 500});
  CHECK(f.waited_before == std::vector<long long>{0, 250});
}

TEST_CASE("transient retry: any other result returns at once", "[retry]") {
  Fake ok{{St::ok}}, other{{St::other}};
  CHECK(ok.run(waits(250, 4000, 120000)) == St::ok);
  CHECK(other.run(waits(250, 4000, 120000)) == St::other);
  CHECK(ok.attempts == 1);
  CHECK(other.attempts == 1);
  CHECK(other.waits.empty());
  Fake later{{St::transient, St::other}};
  CHECK(later.run(waits(250, 4000, 120000)) == St::other);
  CHECK(later.attempts == 2);
}

TEST_CASE("transient retry: the waits stop at the budget and the failure comes back", "[retry]") {
  Fake f{{St::transient}};
  // 250 + 400 + 400 = 1050 would pass 1000: two waits, three attempts.
  CHECK(f.run(waits(250, 400, 1000)) == St::transient);
  CHECK(f.waits == std::vector<long long>{250, 400});
  CHECK(f.attempts == 3);
  Fake none{{St::transient}};  // budget 0 (every program but the GPU tests): no retry
  CHECK(none.run(waits(250, 4000, 0)) == St::transient);
  CHECK(none.attempts == 1);
  CHECK(none.waits.empty());
}
