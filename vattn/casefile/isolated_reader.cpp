// SPDX-License-Identifier: Apache-2.0
#include "vattn/casefile/isolated_reader.h"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <new>

#include "vattn/case/fd_write.h"
#include "vattn/case/memory_limit.h"
#include "vattn/casefile/read_watchdog.h"

namespace vattn {

// The frames the child writes, in order: H (header, case count), then per case S (its name,
// before reading it) and C (the case), and D at the end; E (an InputError's parts) ends early.
// Fields are u64 (this machine's byte order: both ends are this binary) and length-prefixed
// bytes. Written by hand: a pipe between two copies of one program needs no serialization
// library, and the parent bounds every length it reads.
namespace {

constexpr char kHeader = 'H', kStart = 'S', kCase = 'C', kError = 'E', kDone = 'D';
constexpr uint64_t kMaxString = 16u << 20;

class FrameWriter {
 public:
  explicit FrameWriter(int fd) : fd_(fd) {}
  void tag(char t) { bytes(&t, 1); }
  void u64(uint64_t v) { bytes(&v, sizeof v); }
  void f64(double v) { bytes(&v, sizeof v); }
  void str(const std::string& s) {
    u64(s.size());
    bytes(s.data(), s.size());
  }
  template <class T>
  void vec(const std::vector<T>& v) {
    u64(v.size());
    bytes(v.data(), v.size() * sizeof(T));
  }
  void bytes(const void* p, size_t n) {
    if (!write_all(fd_, p, n)) ::_exit(3);  // the parent is gone
  }

 private:
  int fd_;
};

void send_case(FrameWriter& w, const Case& c) {
  w.tag(kCase);
  w.str(c.name);
  w.str(c.recipe);
  w.u64(static_cast<uint64_t>(c.num_heads));
  w.u64(static_cast<uint64_t>(c.d_qk));
  w.u64(static_cast<uint64_t>(c.d_v));
  w.f64(c.sm_scale);
  w.vec(c.q);
  w.vec(c.kv_pool);
  w.vec(c.kv_indices);
  w.vec(c.kv_indptr);
  w.vec(c.kv_slot_ids);
  w.vec(c.kv_draft);
  w.vec(c.qo_indptr);
  w.vec(c.draft_mask);
  w.vec(c.draft_mask_indptr);
  w.vec(c.draft_parent);
  w.u64(c.int_attrs.size());
  for (const auto& [k, v] : c.int_attrs) {
    w.str(k);
    w.u64(static_cast<uint64_t>(v));
  }
  w.u64(c.outputs.size());
  for (const StoredOutput& o : c.outputs) {
    w.str(o.producer);
    w.str(o.description);
    w.vec(o.out);
    w.u64((o.out_is_bf16 ? 1 : 0) | (o.lse_stored ? 2 : 0));
    w.vec(o.lse);
  }
}

// The child's resource limits: address space (what it maps now plus the case memory limit) and,
// with a read timeout, CPU time; killed when the parent dies.
void limit_child(uint64_t memory_bytes) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  uint64_t mapped = 0;
  std::ifstream statm("/proc/self/statm");
  if (statm >> mapped) mapped *= static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const rlimit as{mapped + memory_bytes + (256ull << 20), mapped + memory_bytes + (256ull << 20)};
  ::setrlimit(RLIMIT_AS, &as);
  for (int sig : {SIGSEGV, SIGBUS, SIGXCPU, SIGPIPE}) ::signal(sig, SIG_DFL);
}

[[noreturn]] void child_main(int fd, const std::string& path, const std::string& only_case, long timeout_s) {
  limit_child(case_memory_limit());
  FrameWriter w(fd);
  try {
    const CaseFileCursor cursor(path);
    std::vector<std::string> names = cursor.names();
    if (!only_case.empty()) {
      require_case(names, only_case, path);
      names = {only_case};
    }
    if (timeout_s > 0) {  // CPU time: a backstop under the parent's per-case wall-clock deadline
      const rlim_t cpu = static_cast<rlim_t>(timeout_s) * (names.size() + 1);
      const rlimit lim{cpu, cpu + 5};
      ::setrlimit(RLIMIT_CPU, &lim);
    }
    const CaseFileHeader& h = cursor.header();
    w.tag(kHeader);
    w.u64(static_cast<uint64_t>(h.format_version));
    w.str(h.source);
    w.str(h.created);
    w.str(h.generator);
    w.u64(h.optional.size());
    for (const auto& [k, v] : h.optional) {
      w.str(k);
      w.str(v);
    }
    w.u64(names.size());
    for (const std::string& name : names) {
      w.tag(kStart);
      w.str(name);
      send_case(w, cursor.read(name, true));
    }
    w.tag(kDone);
  } catch (const InputError& e) {
    w.tag(kError);
    w.str(e.file());
    w.str(e.case_name());
    w.str(e.field());
    w.str(e.reason());
  } catch (const std::bad_alloc&) {
    w.tag(kError);
    w.str(path);
    w.str("");
    w.str("");
    w.str("reading it needs more memory than the limit allows (--max-memory)");
  } catch (const std::exception& e) {
    w.tag(kError);
    w.str(path);
    w.str("");
    w.str("");
    w.str(e.what());
  }
  ::_exit(0);  // not exit(): nothing of the parent's (stdio buffers, atexit handlers) runs twice
}

}  // namespace

IsolatedCaseReader::IsolatedCaseReader(const std::string& path, const std::string& only_case) : path_(path) {
  timeout_s_ = read_timeout_from_environment();
  start_child(only_case);
}

IsolatedCaseReader::~IsolatedCaseReader() {
  if (fd_ >= 0) ::close(fd_);
  if (child_ > 0) {
    ::kill(child_, SIGKILL);
    int status = 0;
    while (::waitpid(child_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

void IsolatedCaseReader::start_child(const std::string& only_case) {
  int p[2];
  if (::pipe(p) != 0)
    throw InputError(path_, "", "", std::string("cannot start its reader (pipe: ") + std::strerror(errno) + ")");
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(p[0]);
    ::close(p[1]);
    throw InputError(path_, "", "", std::string("cannot start its reader (fork: ") + std::strerror(errno) + ")");
  }
  if (pid == 0) {
    ::close(p[0]);
    child_main(p[1], path_, only_case, timeout_s_);
  }
  ::close(p[1]);
  child_ = pid;
  fd_ = p[0];
}

bool IsolatedCaseReader::read_exact(void* buf, size_t n) {
  char* c = static_cast<char*>(buf);
  while (n > 0) {
    pollfd pfd{fd_, POLLIN, 0};
    const int ready =
        ::poll(&pfd, 1, timeout_s_ > 0 ? static_cast<int>(std::min<long>(timeout_s_, 2000000) * 1000) : -1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      ::kill(child_, SIGKILL);
      throw InputError(path_, reading_, "", hdf5_timeout_reason(timeout_s_));
    }
    const ssize_t r = ::read(fd_, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

void IsolatedCaseReader::child_ended() {
  int status = 0;
  pid_t r;
  while ((r = ::waitpid(child_, &status, 0)) < 0 && errno == EINTR) {
  }
  child_ = -1;
  done_ = true;
  std::string why = "its reader ended before the file was read";
  if (r > 0 && WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (sig == SIGSEGV || sig == SIGBUS) {
      why = hdf5_crash_reason(sig == SIGSEGV ? "SIGSEGV" : "SIGBUS");
    } else if (sig == SIGXCPU) {
      why = std::string("reading it used more CPU time than ") + kReadTimeoutVariable +
            " allows (its seconds per case): the file is corrupt or too large";
    } else if (sig == SIGKILL) {
      why = "its reader was killed (out of memory?) while reading it";
    } else {
      why = "its reader died of signal " + std::to_string(sig) + " (" + strsignal(sig) + ") while reading it";
    }
  } else if (r > 0 && WIFEXITED(status)) {
    why += " (exit " + std::to_string(WEXITSTATUS(status)) + ")";
  }
  throw InputError(path_, reading_, "", why);
}

uint64_t IsolatedCaseReader::read_u64() {
  uint64_t v = 0;
  if (!read_exact(&v, sizeof v)) child_ended();
  return v;
}

std::string IsolatedCaseReader::read_string() {
  const uint64_t n = read_u64();
  if (n > kMaxString)
    throw InputError(path_, reading_, "", "its reader sent a string of " + std::to_string(n) + " bytes");
  std::string s(n, '\0');
  if (n > 0 && !read_exact(s.data(), n)) child_ended();
  return s;
}

template <class T>
void IsolatedCaseReader::read_vec(std::vector<T>& v) {
  const uint64_t n = read_u64();
  if (n > case_memory_limit() / sizeof(T))
    throw InputError(path_, reading_, "",
                     "its reader sent an array of " + std::to_string(n) + " elements, over the memory limit");
  v.resize(n);
  if (n > 0 && !read_exact(v.data(), n * sizeof(T))) child_ended();
}

void IsolatedCaseReader::read_header_frame() {
  if (have_header_) return;
  char tag = 0;
  if (!read_exact(&tag, 1)) child_ended();
  if (tag == kError) {
    const std::string file = read_string(), name = read_string(), field = read_string(), reason = read_string();
    done_ = true;
    throw InputError(file, name, field, reason);
  }
  if (tag != kHeader) throw InputError(path_, "", "", "its reader sent an unexpected frame");
  header_.format_version = static_cast<int>(read_u64());
  header_.source = read_string();
  header_.created = read_string();
  header_.generator = read_string();
  const uint64_t nopt = read_u64();
  if (nopt > 64) throw InputError(path_, "", "", "its reader sent " + std::to_string(nopt) + " header attributes");
  for (uint64_t i = 0; i < nopt; ++i) {
    const std::string k = read_string();
    header_.optional[k] = read_string();
  }
  count_ = read_u64();
  have_header_ = true;
}

const CaseFileHeader& IsolatedCaseReader::header() {
  read_header_frame();
  return header_;
}

size_t IsolatedCaseReader::case_count() {
  read_header_frame();
  return static_cast<size_t>(count_);
}

bool IsolatedCaseReader::next(Case& out) {
  read_header_frame();
  if (done_) return false;
  for (;;) {
    char tag = 0;
    if (!read_exact(&tag, 1)) child_ended();
    if (tag == kDone) {
      done_ = true;
      int status = 0;
      while (::waitpid(child_, &status, 0) < 0 && errno == EINTR) {
      }
      child_ = -1;
      return false;
    }
    if (tag == kError) {
      const std::string file = read_string(), name = read_string(), field = read_string(), reason = read_string();
      done_ = true;
      throw InputError(file, name, field, reason);
    }
    if (tag == kStart) {
      reading_ = read_string();
      continue;
    }
    if (tag != kCase) throw InputError(path_, reading_, "", "its reader sent an unexpected frame");
    Case c;
    c.name = read_string();
    c.recipe = read_string();
    c.num_heads = static_cast<int>(read_u64());
    c.d_qk = static_cast<int>(read_u64());
    c.d_v = static_cast<int>(read_u64());
    if (!read_exact(&c.sm_scale, sizeof c.sm_scale)) child_ended();
    read_vec(c.q);
    read_vec(c.kv_pool);
    read_vec(c.kv_indices);
    read_vec(c.kv_indptr);
    read_vec(c.kv_slot_ids);
    read_vec(c.kv_draft);
    read_vec(c.qo_indptr);
    read_vec(c.draft_mask);
    read_vec(c.draft_mask_indptr);
    read_vec(c.draft_parent);
    const uint64_t nattr = read_u64();
    if (nattr > 64)
      throw InputError(path_, reading_, "", "its reader sent " + std::to_string(nattr) + " case attributes");
    for (uint64_t i = 0; i < nattr; ++i) {
      const std::string k = read_string();
      c.int_attrs[k] = static_cast<int64_t>(read_u64());
    }
    const uint64_t nout = read_u64();
    if (nout > 4096) throw InputError(path_, reading_, "", "its reader sent " + std::to_string(nout) + " outputs");
    for (uint64_t i = 0; i < nout; ++i) {
      StoredOutput o;
      o.producer = read_string();
      o.description = read_string();
      read_vec(o.out);
      const uint64_t flags = read_u64();
      o.out_is_bf16 = (flags & 1) != 0;
      o.lse_stored = (flags & 2) != 0;
      read_vec(o.lse);
      c.outputs.push_back(std::move(o));
    }
    // Checked again on this side: what crossed the pipe came from a process that read an
    // untrusted file, and nothing downstream indexes a case that validate() has not passed.
    try {
      validate(c);
    } catch (const InputError& e) {
      throw e.in_file(path_);
    }
    out = std::move(c);
    return true;
  }
}

}  // namespace vattn
