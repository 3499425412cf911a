// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/protocol/protocol.h"

#include "vattn/case/fd_write.h"

#include <cerrno>
#include <cstdio>

#include <unistd.h>

namespace vattn::fuzz {

bool send_message(int fd, const json& message) {
  // dump() escapes every string (replacing bytes that are not UTF-8), so a line never breaks.
  const std::string line = message.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  return write_all(fd, line.data(), line.size());
}

bool LineReader::fill(int fd) {
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      buffer_.append(buf, static_cast<size_t>(n));
      // A worker that writes megabytes without a newline is broken: keep the tail only.
      if (buffer_.size() > (size_t{16} << 20)) buffer_.erase(0, buffer_.size() - (size_t{1} << 20));
      return true;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

bool LineReader::next(json& message) {
  const size_t nl = buffer_.find('\n');
  if (nl == std::string::npos) return false;
  const std::string line = buffer_.substr(0, nl);
  buffer_.erase(0, nl + 1);
  message = json::parse(line, nullptr, false);
  if (message.is_discarded() || !message.is_object()) {
    message = json{{"ev", "garbled"}, {"text", line.substr(0, 200)}};
  }
  return true;
}

std::string Verdict::signature() const {
  if (verdict == "pass") return "";
  if (verdict == "wrong" || verdict == "refused") return verdict + ": " + check;
  if (verdict == "device-error") {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%x", device_error);
    return verdict + ": " + check + " " + buf;
  }
  if (verdict == "guard") return verdict + ": " + check;
  // crash / died / hang: what ended the worker (signal name, CUDA error, exit status)
  return detail.empty() ? verdict : verdict + ": " + check;
}

json Verdict::to_json() const {
  json j{{"index", index}, {"verdict", verdict}};
  if (!check.empty()) j["check"] = check;
  if (!detail.empty()) j["detail"] = detail;
  if (!oracle.empty()) j["oracle"] = oracle;
  if (!repro.empty()) j["repro"] = repro;
  if (device_error) j["device_error"] = device_error;
  j["target_s"] = target_s;
  j["oracle_s"] = oracle_s;
  j["total_s"] = total_s;
  return j;
}

Verdict Verdict::from_json(const json& j) {
  Verdict v;
  v.index = j.value("index", int64_t{-1});
  v.verdict = j.value("verdict", std::string("died"));
  v.check = j.value("check", std::string());
  v.detail = j.value("detail", std::string());
  v.oracle = j.value("oracle", std::string());
  v.repro = j.value("repro", std::string());
  v.device_error = j.value("device_error", uint32_t{0});
  v.target_s = j.value("target_s", 0.0);
  v.oracle_s = j.value("oracle_s", 0.0);
  v.total_s = j.value("total_s", 0.0);
  return v;
}

}  // namespace vattn::fuzz
