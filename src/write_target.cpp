#include "write_target.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace vattn {

namespace fs = std::filesystem;

std::string write_target(const std::string& path) {
  std::error_code ec;
  if (!fs::is_symlink(path, ec) || !fs::exists(path, ec)) return path;
  const fs::path target = fs::canonical(path, ec);
  return ec ? path : target.string();
}

std::string write_target_problem(const std::string& path) {
  if (path.empty()) return "the path is empty";
  if (path == "-") return "'-' is not a file here; give a file path";
  const std::string target = write_target(path);
  const std::string via = target == path ? "" : " (the link's target " + target + ")";
  std::error_code ec;
  const fs::file_status st = fs::status(target, ec);
  if (fs::exists(st)) {
    if (fs::is_directory(st)) return "it is a directory" + via;
    if (!fs::is_regular_file(st)) return "it is not a regular file (a device, pipe or socket)" + via + "; give a file path";
    if (::access(target.c_str(), W_OK) != 0) return "cannot write to it" + via + ": " + std::strerror(errno);
  }
  const fs::path parent = fs::path(target).parent_path();
  const std::string folder = parent.empty() ? "." : parent.string();
  if (!fs::is_directory(folder, ec)) return "its folder " + folder + " does not exist";
  if (::access(folder.c_str(), W_OK) != 0) return "cannot create files in " + folder + ": " + std::strerror(errno);
  return "";
}

}  // namespace vattn
