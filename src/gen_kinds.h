// The names a recipe may use for trees, value profiles and pool layouts, in one place so the
// parser, the generators and the CLI help agree.
#pragma once

#include <string>

namespace vattn::gen {

constexpr const char* kTreeKinds = "chain|random|star|ddtree|deep|wide|padded";
constexpr const char* kProfiles = "uniform|k26|adversarial|huge|ties|tiny";
constexpr const char* kLayouts = "contiguous|scattered|reversed|sparse";

// Largest T_b a recipe may ask for: the spec's maximum is 1025; the dense mask is T^2 bytes.
constexpr int kMaxDrafts = 4096;

// True when `name` is one of the '|'-separated words of `list`.
inline bool in_list(const std::string& name, const char* list) {
  const std::string all = std::string("|") + list + "|";
  return !name.empty() && name.find('|') == std::string::npos && all.find("|" + name + "|") != std::string::npos;
}
inline bool is_tree_kind(const std::string& s) { return in_list(s, kTreeKinds); }
inline bool is_profile(const std::string& s) { return in_list(s, kProfiles); }
inline bool is_layout(const std::string& s) { return in_list(s, kLayouts); }

}  // namespace vattn::gen
