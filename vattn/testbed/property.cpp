// SPDX-License-Identifier: Apache-2.0
#include "vattn/testbed/property.h"

namespace vattn::testbed {

const char* property_name(Property p) {
  switch (p) {
    case Property::kPartlyVisiblePoison: return "partly visible poison";
    case Property::kFp32Partials: return "fp32 partials";
    case Property::kArgumentContract: return "argument contract";
    case Property::kInjectedFault: return "fault";
  }
  return "?";
}

}  // namespace vattn::testbed
