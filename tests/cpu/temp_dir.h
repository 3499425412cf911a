// SPDX-License-Identifier: Apache-2.0
// A fresh directory under /tmp for one test, removed with everything in it at scope exit.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include <catch2/catch.hpp>

namespace vattn::test {

struct TempDir {
  std::string path;
  explicit TempDir(const std::string& prefix = "vattn_test") {
    std::string tmpl = "/tmp/" + prefix + "_XXXXXX";
    const char* made = mkdtemp(tmpl.data());
    REQUIRE(made != nullptr);
    path = made;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return path + "/" + name; }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace vattn::test
