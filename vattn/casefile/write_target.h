// SPDX-License-Identifier: Apache-2.0
// Where a whole-file write (a case file, a JSON report) lands. Files are written to a temporary
// name and renamed into place; renaming over a symbolic link would replace the link, so a link to
// a file is followed (also a dangling one: its target is created) and the target replaced (the
// link stays).
#pragma once

#include <string>

namespace vattn {

// The folder a file at `path` lives in ("." for a bare name).
std::string folder_of(const std::string& path);

// `path`, or the file at the end of the symbolic links starting at `path`.
std::string write_target(const std::string& path);

// Why `path` cannot be replaced by a written file, or "" when it can: it is "-" (not a file),
// a link loop, a directory, or an existing device, pipe or socket (a rename would put a plain
// file in its place), its folder is missing, or it or its folder is not writable. Follows links
// like write_target. Creates nothing.
std::string write_target_problem(const std::string& path);

}  // namespace vattn
