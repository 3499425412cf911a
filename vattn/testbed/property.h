// SPDX-License-Identifier: Apache-2.0
// The properties a caller may ask the testbed to check on a case besides the run itself (status,
// device error word, guard bands) and the oracle comparison, which every run gets. The one list:
// docs/properties.md mirrors it ("The testbed's properties"); a new check is a new entry here and
// its judgement in the testbed, and every entry point can then choose it.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

namespace vattn::testbed {

enum class Property {
  kPartlyVisiblePoison,  // NaN/Inf in a draft some rows see: the others unchanged (vattn/check/draft_poison.h)
  kFp32Partials,         // zero queries, two or more splits: the merge rounds no worse than one split (partials.h)
  kArgumentContract,     // run() with one host-known argument broken refuses and enqueues nothing (contract.h)
  kInjectedFault,        // a fault the caller planted on the device: error word set, the rows NaN (testbed.h)
};

constexpr Property kAllProperties[] = {Property::kPartlyVisiblePoison, Property::kFp32Partials,
                                       Property::kArgumentContract, Property::kInjectedFault};

// The name a failure of the property carries as its check ("partly visible poison"); an injected
// fault's checks add the fault's kind and the part that failed ("fault index-neg: error word").
const char* property_name(Property p);

// A set of properties (the options a caller chooses).
class Properties {
 public:
  Properties() = default;
  Properties(std::initializer_list<Property> ps) {
    for (Property p : ps) add(p);
  }
  Properties& add(Property p) {
    bits_ |= 1u << static_cast<unsigned>(p);
    return *this;
  }
  Properties& remove(Property p) {
    bits_ &= ~(1u << static_cast<unsigned>(p));
    return *this;
  }
  bool has(Property p) const { return (bits_ >> static_cast<unsigned>(p)) & 1u; }

 private:
  unsigned bits_ = 0;
};

}  // namespace vattn::testbed
