// SPDX-License-Identifier: Apache-2.0
#include "vattn/gpu/timeline_summary.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace vattn {
namespace {

const char* const kPhaseNames[] = {"begins (us after the plan kernel's entry)", "Q in the registers",
                                   "tile 0 in shared memory", "tile loop", "output stored"};
constexpr int kPhases = 5;

TimelineStats stats_of(std::vector<double> v) {
  TimelineStats s;
  s.samples = static_cast<int>(v.size());
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = v[v.size() / 2];
  s.min = v.front();
  s.max = v.back();
  return s;
}

double median_of(std::vector<double> v) { return v.empty() ? 0 : stats_of(std::move(v)).median; }

std::string where(size_t call, int block) {
  return "call " + std::to_string(call) + ", partial block " + std::to_string(block);
}

}  // namespace

TimelineSummary summarize_timeline(const std::vector<vattn_timeline>& calls, int partial_blocks) {
  if (calls.empty()) throw std::runtime_error("timeline: no call to summarize");
  const int blocks = std::min(partial_blocks, VATTN_TL_BLOCKS);
  std::vector<double> samples[2][kPhases], rates, past_wait, done, r_wait, r_done, r_entry, r_after, written;
  TimelineSummary sum;
  for (size_t c = 0; c < calls.size(); ++c) {
    const vattn_timeline& t = calls[c];
    const uint64_t plan0 = t.plan_ns[0];
    if (plan0 == 0) throw std::runtime_error("timeline: call " + std::to_string(c) + " has no plan-kernel stamp");
    auto since_plan = [&](uint64_t ns) { return (static_cast<double>(ns) - static_cast<double>(plan0)) * 1e-3; };
    if (t.plan_ns[1] != 0) {
      if (t.plan_ns[1] < plan0)
        throw std::runtime_error("timeline: call " + std::to_string(c) +
                                 ": the plan written before the plan kernel's entry");
      written.push_back(since_plan(t.plan_ns[1]));
    }
    double wait_c = 0, done_c = 0, rwait_c = 0, rdone_c = 0;
    int with_items = 0, with_later = 0;
    for (int k = 0; k < blocks; ++k) {
      const uint64_t* ns = t.partial_ns + static_cast<size_t>(k) * VATTN_TL_SLOTS;
      const int64_t* ck = t.partial_clock + static_cast<size_t>(k) * VATTN_TL_SLOTS;
      if (ns[1] == 0) continue;  // this block did not run (or not this far) in the call
      if (ns[0] == 0) throw std::runtime_error("timeline: " + where(c, k) + " is past its wait without an entry stamp");
      wait_c = std::max(wait_c, since_plan(ns[1]));
      int last = 1;  // the block's last stamped slot
      for (int i = 0; i < 2; ++i) {
        const int base = 2 + VATTN_TL_ITEM_SLOTS * i;
        if (ns[base] == 0) continue;
        for (int p = 1; p < VATTN_TL_ITEM_SLOTS; ++p) {
          if (ns[base + p] == 0)
            throw std::runtime_error("timeline: " + where(c, k) + ", item " + std::to_string(i) + ": point " +
                                     std::to_string(p) + " missing");
          if (ck[base + p] < ck[base + p - 1] || ns[base + p] < ns[base + p - 1])
            throw std::runtime_error("timeline: " + where(c, k) + ", item " + std::to_string(i) + ": point " +
                                     std::to_string(p) + " before point " + std::to_string(p - 1));
        }
        last = base + VATTN_TL_ITEM_SLOTS - 1;
        (i == 0 ? with_items : with_later)++;
      }
      if (last == 1) continue;
      const double ns_span = static_cast<double>(ns[last]) - static_cast<double>(ns[0]);
      const double ck_span = static_cast<double>(ck[last] - ck[0]);
      if (ns_span <= 0 || ck_span <= 0) continue;  // too short to give a clock rate
      const double cycles_per_us = ck_span / ns_span * 1e3;
      rates.push_back(cycles_per_us * 1e-3);
      for (int i = 0; i < 2; ++i) {
        const int base = 2 + VATTN_TL_ITEM_SLOTS * i;
        if (ns[base] == 0) continue;
        samples[i][0].push_back(since_plan(ns[base]));
        for (int p = 1; p < VATTN_TL_ITEM_SLOTS; ++p)
          samples[i][p].push_back(static_cast<double>(ck[base + p] - ck[base + p - 1]) / cycles_per_us);
      }
      done_c = std::max(done_c, since_plan(ns[last]));
    }
    for (int k = 0; k < VATTN_TL_REDUCE_BLOCKS; ++k) {
      const uint64_t* r = t.reduce_ns + static_cast<size_t>(k) * VATTN_TL_REDUCE_SLOTS;
      if (r[0] != 0) r_entry.push_back(since_plan(r[0]));
      if (r[1] != 0) rwait_c = std::max(rwait_c, since_plan(r[1]));
      if (r[2] != 0) rdone_c = std::max(rdone_c, since_plan(r[2]));
      if (r[1] != 0 && r[2] >= r[1]) r_after.push_back(static_cast<double>(r[2] - r[1]) * 1e-3);
    }
    past_wait.push_back(wait_c);
    done.push_back(done_c);
    r_wait.push_back(rwait_c);
    r_done.push_back(rdone_c);
    sum.blocks_with_items = std::max(sum.blocks_with_items, with_items);
    sum.blocks_with_later_items = std::max(sum.blocks_with_later_items, with_later);
  }
  sum.clock_ghz = median_of(rates);
  sum.plan_written_calls = static_cast<int>(written.size());
  sum.plan_written = median_of(written);
  sum.partial_past_wait = median_of(past_wait);
  sum.partial_done = median_of(done);
  sum.reduce_past_wait = median_of(r_wait);
  sum.reduce_done = median_of(r_done);
  sum.reduce_entry = stats_of(std::move(r_entry));
  sum.reduce_after_wait = stats_of(std::move(r_after));
  for (int p = 0; p < kPhases; ++p)
    sum.phases.push_back({kPhaseNames[p], stats_of(samples[0][p]), stats_of(samples[1][p])});
  return sum;
}

std::string timeline_table(const TimelineSummary& s) {
  std::ostringstream os;
  char line[256];
  std::snprintf(line, sizeof line,
                "milestones, us after the plan kernel's entry (%%globaltimer; the last block; median over calls):\n");
  os << line;
  std::vector<std::pair<const char*, double>> ms;
  if (s.plan_written_calls > 0) ms.push_back({"the plan written (the plan kernel's last store)", s.plan_written});
  ms.insert(ms.end(), {{"every partial block past its wait (the plan is done)", s.partial_past_wait},
                       {"the last partial item stored", s.partial_done},
                       {"every reduce block past its wait (the partials are in)", s.reduce_past_wait},
                       {"the reduce done", s.reduce_done}});
  for (const auto& [name, v] : ms) {
    std::snprintf(line, sizeof line, "  %-56s %9.2f\n", name, v);
    os << line;
  }
  std::snprintf(
      line, sizeof line,
      "per item, us (median [min .. max] over blocks and calls; phases from each SM's clock64 at %.2f GHz):\n",
      s.clock_ghz);
  os << line;
  std::snprintf(line, sizeof line, "  %-44s %-30s %s\n", "phase", "first item of a block",
                s.blocks_with_later_items > 0 ? "a later item" : "(no block has a later item)");
  os << line;
  auto cell = [](const TimelineStats& x) {
    char b[64];
    if (x.samples == 0) return std::string("-");
    std::snprintf(b, sizeof b, "%7.2f [%.2f .. %.2f]", x.median, x.min, x.max);
    return std::string(b);
  };
  for (const auto& ph : s.phases) {
    std::snprintf(line, sizeof line, "  %-44s %-30s %s\n", ph.name.c_str(), cell(ph.first).c_str(),
                  s.blocks_with_later_items > 0 ? cell(ph.later).c_str() : "");
    os << line;
  }
  std::snprintf(line, sizeof line, "  blocks with an item: %d; with a later item: %d (per call)\n", s.blocks_with_items,
                s.blocks_with_later_items);
  os << line;
  if (s.reduce_entry.samples > 0 || s.reduce_after_wait.samples > 0) {
    os << "reduce blocks, us (median [min .. max] over blocks and calls; %globaltimer):\n";
    std::snprintf(line, sizeof line, "  %-44s %s\n", "begins (us after the plan kernel's entry)",
                  cell(s.reduce_entry).c_str());
    os << line;
    std::snprintf(line, sizeof line, "  %-44s %s\n", "past its wait to done", cell(s.reduce_after_wait).c_str());
    os << line;
  }
  return os.str();
}

}  // namespace vattn
