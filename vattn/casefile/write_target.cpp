// SPDX-License-Identifier: Apache-2.0
#include "vattn/casefile/write_target.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace vattn {

namespace fs = std::filesystem;

std::string folder_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

std::string write_target(const std::string& path) {
  // Follows the chain link by link (a relative target is relative to its link's folder), so a
  // dangling link leads to the file it names, to be created. A loop gives `path` back; the
  // problem check below refuses it.
  fs::path p = path;
  std::error_code ec;
  int hops = 0;
  for (; fs::is_symlink(p, ec); ++hops) {
    if (hops == 40) return path;
    const fs::path next = fs::read_symlink(p, ec);
    if (ec) return path;
    p = next.is_absolute() ? next : p.parent_path() / next;
  }
  return hops == 0 ? path : p.lexically_normal().string();
}

std::string write_target_problem(const std::string& path) {
  if (path.empty()) return "the path is empty";
  if (path == "-") return "'-' is not a file here; give a file path";
  const std::string target = write_target(path);
  std::error_code ec;
  if (fs::is_symlink(target, ec)) return "it is a symbolic link that never reaches a file (a loop)";
  const std::string via = target == path ? "" : " (the link's target " + target + ")";
  const fs::file_status st = fs::status(target, ec);
  if (fs::exists(st)) {
    if (fs::is_directory(st)) return "it is a directory" + via;
    if (!fs::is_regular_file(st))
      return "it is not a regular file (a device, pipe or socket)" + via + "; give a file path";
    if (::access(target.c_str(), W_OK) != 0) return "cannot write to it" + via + ": " + std::strerror(errno);
  }
  const std::string folder = folder_of(target);
  if (!fs::is_directory(folder, ec)) return "its folder " + folder + " does not exist";
  if (::access(folder.c_str(), W_OK) != 0) return "cannot create files in " + folder + ": " + std::strerror(errno);
  return "";
}

}  // namespace vattn
