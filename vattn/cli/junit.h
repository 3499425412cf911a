// SPDX-License-Identifier: Apache-2.0
// JUnit XML for CI systems (`vattn replay --junit FILE`): one <testsuite> per input, one
// <testcase> per (case, producer), a <failure> with the figures when it failed, an <error> for
// an input that could not be used. Written by hand: the format needs only elements, attributes
// and escaping, and no XML library is among the project's dependencies.
#pragma once

#include <string>
#include <vector>

namespace vattn::cli {

struct JunitCase {
  std::string suite;  // the input file ("recipe" for --recipe)
  std::string name;   // "case / producer"
  bool passed = true;
  bool error = false;   // the input was unusable (an <error>, not a <failure>)
  std::string message;  // one line
  std::string detail;   // the element's text
};

// The whole document.
std::string junit_xml(const std::string& name, const std::vector<JunitCase>& cases);

// Text escaped for XML content and attribute values; control bytes (not allowed in XML 1.0)
// become \xNN.
std::string xml_escape(const std::string& s);

}  // namespace vattn::cli
