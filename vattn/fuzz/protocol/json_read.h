// SPDX-License-Identifier: Apache-2.0
// JSON from untrusted text (a worker's line, a journal, a ledger, a summary, a bench report).
// nlohmann-json parses without recursion, but copying, comparing or printing a value recurses
// once per level: a line of a million '[' parses fine and then overflows the stack wherever it is
// used. So every reader parses through here, and nesting deeper than any file of the suite has
// (summaries reach about six levels) is refused before such a value exists.
//
// How: a first pass through the library's SAX interface counts the depth (and finds syntax
// errors) without building anything; only text that passes is parsed into a value. nlohmann's
// parser callback, which also sees the depth, was not used: it rescans an array's elements at
// the end of each object inside it, so a 200,000-entry ledger took 27 s instead of 0.3 s.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace vattn::fuzz {

constexpr int kMaxJsonDepth = 64;

namespace detail {

// The SAX pass: accepts every value, stops at the first level past `max_depth` or the first
// syntax error.
template <class Json>
class DepthCheck : public nlohmann::json_sax<Json> {
 public:
  using Base = nlohmann::json_sax<Json>;
  explicit DepthCheck(int max_depth) : max_depth_(max_depth) {}
  bool null() override { return true; }
  bool boolean(bool /*val*/) override { return true; }
  bool number_integer(typename Base::number_integer_t /*val*/) override { return true; }
  bool number_unsigned(typename Base::number_unsigned_t /*val*/) override { return true; }
  bool number_float(typename Base::number_float_t /*val*/, const typename Base::string_t& /*s*/) override {
    return true;
  }
  bool string(typename Base::string_t& /*val*/) override { return true; }
  bool binary(typename Base::binary_t& /*val*/) override { return true; }
  bool start_object(std::size_t /*elements*/) override { return open(); }
  bool key(typename Base::string_t& /*val*/) override { return true; }
  bool end_object() override { return close(); }
  bool start_array(std::size_t /*elements*/) override { return open(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) override {
    why_ = std::string("not valid JSON (") + ex.what() + ")";
    return false;
  }
  const std::string& why() const { return why_; }

 private:
  bool open() {
    if (++depth_ <= max_depth_) return true;
    why_ = "nested deeper than " + std::to_string(max_depth_) + " levels";
    return false;
  }
  bool close() {
    --depth_;
    return true;
  }
  int max_depth_, depth_ = 0;
  std::string why_;
};

}  // namespace detail

// `text` parsed, or a discarded value (is_discarded()) with `why` (when given) saying what is
// wrong: "not valid JSON (the parser's message)" or "nested deeper than N levels". Json:
// nlohmann::json or nlohmann::ordered_json.
template <class Json>
Json parse_json_bounded(const std::string& text, std::string* why = nullptr, int max_depth = kMaxJsonDepth) {
  detail::DepthCheck<Json> check(max_depth);
  if (Json::sax_parse(text, &check) && check.why().empty()) {
    try {
      return Json::parse(text);
    } catch (const typename Json::exception& e) {  // not expected after the first pass, but never a crash
      if (why != nullptr) *why = std::string("not valid JSON (") + e.what() + ")";
      return Json(Json::value_t::discarded);
    }
  }
  if (why != nullptr) *why = check.why().empty() ? "not valid JSON" : check.why();
  return Json(Json::value_t::discarded);
}

}  // namespace vattn::fuzz
