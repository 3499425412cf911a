// SPDX-License-Identifier: Apache-2.0
// Machine-readable reports are written with nlohmann::json (Debian's nlohmann-json3-dev), one
// library for every report (replay, bench, fuzz). What it cannot decide for us is how a NaN or
// an infinity appears: JSON has no such numbers, so json_number() writes them as the strings
// "NaN", "Infinity" and "-Infinity" (docs/reports.md), never as null or as invalid JSON.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace vattn::cli {

using json = nlohmann::ordered_json;  // reports keep the order their fields are written in

// A number, or its name when it is not finite.
json json_number(double v);

// The fields every report starts with: its schema name and version, and the tool that wrote it.
json report_head(const std::string& schema, int version);

// `json`, indented, with a final newline: what a report file holds.
std::string report_text(const json& j);

}  // namespace vattn::cli
