// SPDX-License-Identifier: Apache-2.0
#include "json.h"

#include <cmath>
#include <cstdio>

namespace vattn::cli {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (ch < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", ch);
          out += buf;
        } else {
          out += static_cast<char>(ch);
        }
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

JsonObject& JsonObject::add(const std::string& key, const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const auto& s : items) quoted.push_back(json_string(s));
  return raw(key, json_array(quoted));
}

JsonObject& JsonObject::raw(const std::string& key, const std::string& json) {
  fields_.emplace_back(key, json);
  return *this;
}

std::string JsonObject::str() const {
  std::string out = "{";
  for (size_t i = 0; i < fields_.size(); ++i) out += (i ? ", " : "") + json_string(fields_[i].first) + ": " + fields_[i].second;
  return out + "}";
}

std::string json_array(const std::vector<std::string>& json_items, const std::string& indent) {
  if (json_items.empty()) return "[]";
  std::string out = "[";
  for (size_t i = 0; i < json_items.size(); ++i) out += (i ? "," : "") + std::string(indent.empty() ? "" : "\n" + indent) + json_items[i];
  return out + (indent.empty() ? "]" : "\n]");
}

}  // namespace vattn::cli
