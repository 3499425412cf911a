// SPDX-License-Identifier: Apache-2.0
// How the GPU target (gpu_target.cpp) holds its plans: the limits it plans a case with, and a
// bounded cache of the plans (kernel runners) made for recipes that carry their own limits. Each
// plan owns a workspace in device memory, so a stream that draws many limits must not keep them
// all. Host code (the runners themselves are the GPU target's): the CPU build tests it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <utility>

#include "kernels/vattn_abi.h"
#include "vattn/fuzz/gen/gen_recipe.h"

namespace vattn::fuzz {

// The limits a case is planned with: its recipe's (limits=R/Q/T/S, with the case's heads), else
// the stream's envelope for that head count (what a server sized for every case of the stream
// passes; plans with those are kept apart, one per head count).
vattn_limits target_limits(const Recipe& r, const GenBudget& envelope, int heads);

// A plan cache key: every field of vattn_limits.
using LimitsKey = std::array<int64_t, 5>;
LimitsKey limits_key(const vattn_limits& l);

// At most `capacity` values; making one more first drops the least recently used.
template <class Key, class Value>
class LruCache {
 public:
  explicit LruCache(size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}

  // The value for `key`, made by `make()` (returning a Value) when absent. The reference stays
  // valid until a later get() makes a value. The least recently used one is dropped before
  // make() runs, so its resources (device memory) are free for the new one.
  template <class Make>
  Value& get(const Key& key, Make&& make) {
    auto it = index_.find(key);
    if (it != index_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return *order_.front().second;
    }
    if (order_.size() >= capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    auto value = std::make_unique<Value>(make());
    order_.emplace_front(key, std::move(value));
    index_[key] = order_.begin();
    return *order_.front().second;
  }

  bool contains(const Key& key) const { return index_.count(key) != 0; }
  size_t size() const { return order_.size(); }
  size_t capacity() const { return capacity_; }
  void clear() {
    index_.clear();
    order_.clear();
  }

 private:
  using Entry = std::pair<Key, std::unique_ptr<Value>>;
  size_t capacity_;
  std::list<Entry> order_;  // most recently used first
  std::map<Key, typename std::list<Entry>::iterator> index_;
};

}  // namespace vattn::fuzz
