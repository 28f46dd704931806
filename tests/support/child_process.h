// A child process for multi-process tests: started from argv with its stdout on a pipe, read line
// by line with a deadline, signalled and reaped. The child gets SIGKILL if the test process dies.
//
// Thread safety: not thread-safe; use one object from one thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace yuebing::test_support {

class ChildProcess {
 public:
  // Starts argv[0] (a path) with the given arguments. Errors: kInternal.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(const std::vector<std::string>& argv);
  ~ChildProcess();  // SIGKILL and reap if still running

  // Reads one line of the child's stdout (without '\n'). Errors: kDeadlineExceeded, kUnavailable
  // (the child closed stdout / exited).
  absl::StatusOr<std::string> ReadLine(std::chrono::milliseconds timeout);

  // Reads lines until one starts with `prefix`; returns it.
  absl::StatusOr<std::string> WaitForLine(const std::string& prefix,
                                          std::chrono::milliseconds timeout);

  void Signal(int signo);
  // Waits for exit up to `timeout`; returns the wait status, or kDeadlineExceeded.
  absl::StatusOr<int> Wait(std::chrono::milliseconds timeout);
  pid_t pid() const { return pid_; }

 private:
  ChildProcess() = default;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string buffer_;
};

// Path of a binary built in this build tree (YUEBING_BUILD_DIR, set by ctest), e.g.
// BuildPath("tests/transport/yb_test_target").
std::string BuildPath(const std::string& relative);

// Waits up to `timeout` until process `pid` is in the stopped state ('T' in /proc/<pid>/stat):
// SIGSTOP takes effect asynchronously. True once it is.
bool WaitStopped(pid_t pid, std::chrono::milliseconds timeout = std::chrono::seconds(5));

}  // namespace yuebing::test_support
