// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/campaign/kernel_identity.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "vattn/case/case.h"

namespace vattn::fuzz {

namespace fs = std::filesystem;

bool is_kernel_library(const std::string& kernel) {
  if (kernel.rfind("host:", 0) == 0) return false;
  return kernel.find('/') != std::string::npos || (kernel.size() > 3 && kernel.substr(kernel.size() - 3) == ".so");
}

std::string absolute_library_path(const std::string& kernel) {
  return fs::absolute(kernel).lexically_normal().string();
}

std::string sha256_of_file(const std::string& path, const std::string& field) {
  // O_NONBLOCK: a FIFO put in the library's place is seen for what it is, not waited on.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(path, "", field, std::string("cannot be read: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InputError(path, "", field, "is not a regular file");
  }
  sha256_ctx ctx;
  sha256_init(&ctx);
  std::vector<uint8_t> buf(size_t{1} << 20);
  while (true) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw InputError(path, "", field, std::string("cannot be read: ") + std::strerror(err));
    }
    if (n == 0) break;
    sha256_update(&ctx, static_cast<size_t>(n), buf.data());
  }
  ::close(fd);
  uint8_t digest[SHA256_DIGEST_SIZE];
  sha256_digest(&ctx, sizeof digest, digest);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (uint8_t b : digest) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

}  // namespace vattn::fuzz
