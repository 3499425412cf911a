// SPDX-License-Identifier: Apache-2.0
#include <unistd.h>

#include <stdexcept>

#include "vattn/cli/commands.h"

namespace vattn::cli {

std::string self_exe() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("cannot find the vattn binary (/proc/self/exe)");
  buf[n] = '\0';
  return buf;
}

}  // namespace vattn::cli
