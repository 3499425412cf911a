// SPDX-License-Identifier: Apache-2.0
#include "vattn/fuzz/protocol/protocol.h"

#include "vattn/case/fd_write.h"
#include "vattn/fuzz/protocol/json_read.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fnmatch.h>

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
  message = parse_json_bounded<json>(line);
  if (message.is_discarded() || !message.is_object()) {
    message = json{{"ev", "garbled"}, {"text", line.substr(0, 200)}};
  }
  return true;
}

std::string Verdict::signature() const {
  if (verdict == "pass") return "";
  std::string base;
  if (verdict == "device-error") {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%x", device_error);
    base = verdict + ": " + check + " " + buf;
  } else if (verdict == "wrong" || verdict == "refused" || verdict == "guard" || !detail.empty()) {
    base = verdict + ": " + check;
  } else {
    base = verdict;  // a crash / died / hang that left no word of what ended it
  }
  return bucket.empty() ? base : base + kBucketSeparator + bucket;
}

std::string signature_check(const std::string& signature) {
  const size_t at = signature.find(kBucketSeparator);
  return at == std::string::npos ? signature : signature.substr(0, at);
}

std::string signature_bucket(const std::string& signature) {
  const size_t at = signature.find(kBucketSeparator);
  return at == std::string::npos ? std::string() : signature.substr(at + std::strlen(kBucketSeparator));
}

bool signature_matches(const std::string& pattern, const std::string& signature) {
  auto glob = [](const std::string& p, const std::string& s) {
    return p == s || ::fnmatch(p.c_str(), s.c_str(), 0) == 0;
  };
  if (glob(pattern, signature)) return true;
  return pattern.find(kBucketSeparator) == std::string::npos && glob(pattern, signature_check(signature));
}

bool same_failure(const std::string& first_signature, const std::string& signature) {
  if (signature == first_signature) return true;
  return first_signature.find(kBucketSeparator) == std::string::npos && !first_signature.empty() &&
         signature_check(signature) == first_signature;
}

json Verdict::to_json() const {
  json j{{"index", index}, {"verdict", verdict}};
  if (!check.empty()) j["check"] = check;
  if (!detail.empty()) j["detail"] = detail;
  if (!oracle.empty()) j["oracle"] = oracle;
  if (!bucket.empty()) j["bucket"] = bucket;
  if (!repro.empty()) j["repro"] = repro;
  if (!evidence_error.empty()) j["evidence_error"] = evidence_error;
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
  v.bucket = j.value("bucket", std::string());
  v.repro = j.value("repro", std::string());
  v.evidence_error = j.value("evidence_error", std::string());
  v.device_error = j.value("device_error", uint32_t{0});
  v.target_s = j.value("target_s", 0.0);
  v.oracle_s = j.value("oracle_s", 0.0);
  v.total_s = j.value("total_s", 0.0);
  return v;
}

}  // namespace vattn::fuzz
