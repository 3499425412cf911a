// SPDX-License-Identifier: Apache-2.0
#include "vattn/cli/junit.h"

#include <map>
#include <sstream>

namespace vattn::cli {

std::string xml_escape(const std::string& s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
          out += "\\x";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  return out;
}

std::string junit_xml(const std::string& name, const std::vector<JunitCase>& cases) {
  std::map<std::string, std::vector<const JunitCase*>> suites;  // in input order would be nicer; names sort
  std::vector<std::string> order;
  for (const JunitCase& c : cases) {
    if (!suites.count(c.suite)) order.push_back(c.suite);
    suites[c.suite].push_back(&c);
  }
  int failures = 0, errors = 0;
  for (const JunitCase& c : cases) {
    failures += !c.passed && !c.error;
    errors += c.error;
  }
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"" << xml_escape(name) << "\" tests=\""
     << cases.size() << "\" failures=\"" << failures << "\" errors=\"" << errors << "\">\n";
  for (const std::string& suite : order) {
    const auto& list = suites[suite];
    int f = 0, e = 0;
    for (const JunitCase* c : list) {
      f += !c->passed && !c->error;
      e += c->error;
    }
    os << "  <testsuite name=\"" << xml_escape(suite) << "\" tests=\"" << list.size() << "\" failures=\"" << f
       << "\" errors=\"" << e << "\">\n";
    for (const JunitCase* c : list) {
      os << "    <testcase classname=\"" << xml_escape(suite) << "\" name=\"" << xml_escape(c->name) << "\"";
      if (c->passed && !c->error) {
        os << "/>\n";
        continue;
      }
      const char* tag = c->error ? "error" : "failure";
      os << ">\n      <" << tag << " message=\"" << xml_escape(c->message) << "\">" << xml_escape(c->detail) << "</"
         << tag << ">\n    </testcase>\n";
    }
    os << "  </testsuite>\n";
  }
  os << "</testsuites>\n";
  return os.str();
}

}  // namespace vattn::cli
