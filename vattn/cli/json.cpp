// SPDX-License-Identifier: Apache-2.0
#include "vattn/cli/json.h"

#include <cmath>

namespace vattn::cli {

json json_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

json report_head(const std::string& schema, int version) {
  return json{{"schema", schema}, {"version", version}, {"generator", std::string("vattn ") + VATTN_VERSION}};
}

std::string report_text(const json& j) {
  // Strings from files may hold invalid UTF-8: replace it rather than throw half-way through.
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace vattn::cli
