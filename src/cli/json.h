// SPDX-License-Identifier: Apache-2.0
// Just enough JSON for machine-readable reports: escaped strings, numbers that stay valid JSON
// (NaN and infinities become null), and an object builder that keeps key order.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace vattn::cli {

std::string json_string(const std::string& s);
std::string json_number(double v);

class JsonObject {
 public:
  JsonObject& add(const std::string& key, const std::string& text) { return raw(key, json_string(text)); }
  JsonObject& add(const std::string& key, const char* text) { return raw(key, json_string(text)); }
  JsonObject& add(const std::string& key, double v) { return raw(key, json_number(v)); }
  JsonObject& add(const std::string& key, int64_t v) { return raw(key, std::to_string(v)); }
  JsonObject& add(const std::string& key, int v) { return raw(key, std::to_string(v)); }
  JsonObject& add(const std::string& key, bool v) { return raw(key, v ? "true" : "false"); }
  JsonObject& add(const std::string& key, const std::vector<std::string>& items);  // array of strings
  JsonObject& raw(const std::string& key, const std::string& json);                // already JSON
  std::string str() const;

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

std::string json_array(const std::vector<std::string>& json_items, const std::string& indent = "");

}  // namespace vattn::cli
