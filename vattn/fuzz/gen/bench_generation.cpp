// SPDX-License-Identifier: Apache-2.0
// vattn_gen_bench [CASES] [SEED]: what generating the campaign's cases costs on one core, the
// share of a fuzz worker's pool threads that goes into making inputs (the summary's "pool
// threads busy"). Draws the first CASES (default 300) cases of the large stream with device
// variants and plan variants, as a GPU campaign does, and prints seconds per case by family
// (short, serving, long) and, for long contexts, by value profile, with the pool bytes made per
// second, and a digest of every value made (equal digests: a change to the generators left the
// cases as they were).
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>

#include <CLI/CLI.hpp>

#include "vattn/fuzz/gen/case_stream.h"

namespace {

int run(int argc, char** argv) {
  using namespace vattn;
  using namespace vattn::fuzz;
  long cases = 300, seed = 1;
  std::string cases_text, seed_text;
  CLI::App app("What generating the fuzz campaign's cases costs on one core (vattn/fuzz/gen/bench_generation.cpp).",
               "vattn_gen_bench");
  app.add_option("CASES", cases_text, "cases of the large stream to draw (default 300)");
  app.add_option("SEED", seed_text, "the stream's seed (default 1)");
  // Plain decimal only: CLI11's own integer conversion would read 010 as 8 and 0x10 as 16.
  auto decimal = [](const char* what, const std::string& text, long lo, long hi, long* out) {
    if (text.empty()) return true;
    errno = 0;
    char* end = nullptr;
    const long v = std::strtol(text.c_str(), &end, 10);
    if (!std::isdigit(static_cast<unsigned char>(text[0])) || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
      std::fprintf(stderr, "vattn_gen_bench: %s '%s' is not a whole number in %ld..%ld\n", what, text.c_str(), lo, hi);
      return false;
    }
    *out = v;
    return true;
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "vattn_gen_bench: %s (usage: vattn_gen_bench [CASES >= 1] [SEED >= 0])\n", e.what());
    return 2;
  }
  if (!decimal("CASES", cases_text, 1, 100000000L, &cases) || !decimal("SEED", seed_text, 0, 1L << 62, &seed)) return 2;
  StreamConfig config;
  config.seed = static_cast<uint64_t>(seed);
  config.budget = "large";
  config.device_variants = config.plan_variants = true;
  const CaseStream stream(config);
  struct Tally {
    long n = 0;
    double s = 0, bytes = 0;
  };
  std::map<std::string, Tally> by_class, by_profile;
  uint64_t digest = 0xcbf29ce484222325ull;
  for (long i = 0; i < cases; ++i) {
    const StreamCase sc = stream.at(i);
    const auto t0 = std::chrono::steady_clock::now();
    const Case c = generate_case(sc.recipe, "bench");
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double bytes = 2.0 * static_cast<double>(c.kv_pool.size() + c.q.size() + c.kv_draft.size());
    for (const auto* v : {&c.kv_pool, &c.q, &c.kv_draft})
      for (uint16_t x : *v) digest = (digest ^ x) * 0x100000001b3ull;  // FNV-1a over 16-bit words
    for (Tally* t : {&by_class[size_class(sc)], sc.long_context ? &by_profile[sc.recipe.profile] : nullptr}) {
      if (!t) continue;
      ++t->n;
      t->s += dt;
      t->bytes += bytes;
    }
  }
  std::printf("generation, one core, %ld cases of the large stream (seed %ld):\n", cases, seed);
  auto line = [](const std::string& name, const Tally& t) {
    std::printf("  %-12s %5ld cases  %8.4f s/case  %7.1f MB/case  %6.0f MB/s\n", name.c_str(), t.n, t.s / t.n,
                t.bytes / t.n / 1e6, t.bytes / t.s / 1e6);
  };
  for (const auto& [k, t] : by_class) line(k, t);
  std::printf("long contexts by value profile:\n");
  for (const auto& [k, t] : by_profile) line(k, t);
  // The same digest before and after a change to the generators: they still make the same cases.
  std::printf("digest of every q, kv_pool and kv_draft value: %016llx\n", static_cast<unsigned long long>(digest));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // whatever the generators or CLI11 throw: reported, not std::terminate
    std::fprintf(stderr, "vattn_gen_bench: %s\n", e.what());
    return 2;
  }
}
