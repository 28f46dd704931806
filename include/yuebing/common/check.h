// Always-on invariant checks, kept in release builds (TigerBeetle-style assertions).
//
// YB_CHECK(cond, "what must hold") is for invariants the code itself guarantees: a failure means a
// bug in yuebing (or memory corruption), not bad input, so the process prints the condition, the
// message and the source location to stderr and aborts rather than go on and risk serving wrong
// bytes. Bad input from a caller or a peer is never checked with YB_CHECK: it gets an
// absl::Status. The condition is evaluated exactly once; keep it cheap (no allocation, no locks).
#pragma once

namespace yuebing::internal {
// Prints "yuebing: check failed at FILE:LINE: COND (MESSAGE)" and aborts. Never returns.
[[noreturn]] void CheckFailed(const char* file, int line, const char* condition,
                              const char* message) noexcept;
}  // namespace yuebing::internal

#define YB_CHECK(cond, message)                                               \
  do {                                                                        \
    if (__builtin_expect(!(cond), 0)) {                                       \
      ::yuebing::internal::CheckFailed(__FILE__, __LINE__, #cond, (message)); \
    }                                                                         \
  } while (0)
