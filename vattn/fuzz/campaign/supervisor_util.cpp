// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/campaign/supervisor_util.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <regex>
#include <sstream>

namespace vattn::fuzz::supervisor_detail {

namespace fs = std::filesystem;

std::string utc_now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string hms(double s) {
  char buf[32];
  const auto t = static_cast<long long>(s);
  std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", t / 3600, (t / 60) % 60, t % 60);
  return buf;
}

std::string cuda_error_check(const std::string& what) {
  std::smatch m;
  static const std::regex name("cudaError[A-Za-z]+");
  return std::regex_search(what, m, name) ? "CUDA " + m.str() : "CUDA error";
}

std::vector<std::string> visible_gpus() {
  std::vector<std::string> ids;
  if (const char* env = std::getenv("CUDA_VISIBLE_DEVICES"); env != nullptr) {
    std::stringstream in(env);
    std::string item;
    while (std::getline(in, item, ','))
      if (!item.empty() && item != "-1") ids.push_back(item);
    return ids;
  }
  std::error_code ec;
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    (void)e;
    ++n;
  }
  if (n == 0) {
    if (FILE* p = ::popen("nvidia-smi -L 2>/dev/null", "r")) {
      char line[512];
      while (std::fgets(line, sizeof line, p))
        if (std::strncmp(line, "GPU ", 4) == 0) ++n;
      ::pclose(p);
    }
  }
  for (int i = 0; i < n; ++i) ids.push_back(std::to_string(i));
  return ids;
}

}  // namespace vattn::fuzz::supervisor_detail
