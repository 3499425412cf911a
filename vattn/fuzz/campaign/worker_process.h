// SPDX-License-Identifier: Apache-2.0
// One worker process as the supervisor sees it: spawned in a process group of its own (so a
// kill takes everything it started), stdin for commands, fd 3 for reports, stdout and stderr
// appended to a log file, and killed by the kernel if the supervisor dies (PR_SET_PDEATHSIG).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <sys/types.h>

namespace vattn::fuzz {

class WorkerProcess {
 public:
  WorkerProcess() = default;
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // argv[0] is the program; env entries are set (or replaced) in the child, which runs `nice_increment`
  // nicer than the supervisor. Throws ResourceError when no pipe or process can be had (EMFILE,
  // ENFILE, ENOMEM, EAGAIN), std::runtime_error on another failure.
  void spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             const std::string& log_path, int nice_increment = 0);
  bool alive() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  int command_fd() const { return cmd_fd_; }
  int report_fd() const { return rep_fd_; }
  // Whether the process has ended (reaped, without blocking); `status` is its wait status.
  bool exited(int* status);
  // SIGKILL to the whole process group, then reap. Safe to call on a dead or unspawned worker.
  void kill_group();
  // Closes stdin (the worker drains and exits), waits up to `seconds`, then kills.
  void stop(double seconds);

 private:
  void close_fds();
  pid_t pid_ = -1;
  int cmd_fd_ = -1, rep_fd_ = -1;
};

// "signal 11 (SIGSEGV)", "exit status 70", for a wait status.
std::string describe_wait_status(int status);

}  // namespace vattn::fuzz
