// SPDX-License-Identifier: Apache-2.0
// What a campaign fuzzes, pinned down: a revision library is recorded as an absolute path with
// the SHA-256 of its bytes (Nettle's), so a campaign resumes from any working directory and
// `--resume` can tell the library it would load from the one the campaign ran (it refuses a
// changed or unrecorded one unless told: --allow-changed-kernel). Host targets and the built-in
// revisions load no file: their name is their identity.
#pragma once

#include <string>

namespace vattn::fuzz {

// Whether `kernel` names a revision library file, as vattn/gpu/revision.cpp tells: a path with a
// '/', or a name ending in .so (a bare one is the file in the working directory). host:* is not.
bool is_kernel_library(const std::string& kernel);

// The library's absolute path, as `kernel` names it from the working directory.
std::string absolute_library_path(const std::string& kernel);

// The SHA-256 of a regular file's bytes, 64 lowercase hex digits. InputError (naming the file and
// `field`) when it is missing, not a regular file, or cannot be read.
std::string sha256_of_file(const std::string& path, const std::string& field);

}  // namespace vattn::fuzz
