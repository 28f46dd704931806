// yuebing::Mutex and friends: absl::Mutex with the same interface and thread-safety annotations,
// made visible to ThreadSanitizer.
//
// Why: Debian ships Abseil as prebuilt, uninstrumented libraries, so TSan cannot see absl::Mutex
// lock and unlock and reports every guarded access as a race. In a TSan build (and only there)
// these wrappers tell TSan about each acquire and release; in every other build they compile to
// the absl calls alone.
//
// In optimized builds the first yuebing::Mutex turns off Abseil's deadlock detection for the
// process (see ConfigureAbseilMutexes below).
// Use these instead of absl::Mutex/MutexLock/ReaderMutexLock/CondVar/Condition in yuebing code.
// Thread safety: as absl::Mutex. A Condition's function runs with the mutex held, possibly on
// another thread (the one unlocking), as with absl.
#pragma once

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#if defined(__SANITIZE_THREAD__)
#define YUEBING_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define YUEBING_TSAN 1
#endif
#endif

#ifdef YUEBING_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace yuebing {

namespace sync_internal {
// Happens-before edges on `sync`: a release by one thread is seen by a later acquire in another.
inline void Acquire(const void* sync) {
#ifdef YUEBING_TSAN
  __tsan_acquire(const_cast<void*>(sync));
#else
  (void)sync;
#endif
}
inline void Release(const void* sync) {
#ifdef YUEBING_TSAN
  __tsan_release(const_cast<void*>(sync));
#else
  (void)sync;
#endif
}
}  // namespace sync_internal

// A predicate evaluated with the mutex held: a bool to read, or a function of one pointer.
class Condition {
 public:
  explicit Condition(const bool* flag)
      : invoke_(&ReadFlag), func_(nullptr), arg_(const_cast<bool*>(flag)) {}
  template <typename T>
  Condition(bool (*func)(T*), T* arg)
      : invoke_(&Invoke<T>),
        func_(reinterpret_cast<void (*)()>(func)),
        arg_(const_cast<void*>(static_cast<const void*>(arg))) {}

  bool Eval() const { return invoke_(func_, arg_); }

 private:
  static bool ReadFlag(void (*)(), void* flag) { return *static_cast<bool*>(flag); }
  // Casts the function back to its own type (a round trip the standard allows) and calls it.
  template <typename T>
  static bool Invoke(void (*func)(), void* arg) {
    return reinterpret_cast<bool (*)(T*)>(func)(static_cast<T*>(arg));
  }
  bool (*invoke_)(void (*)(), void*);
  void (*func_)();
  void* arg_;
};

namespace sync_internal {
// Once per process, in optimized builds (NDEBUG): turns off Abseil's lock-order graph. Debian
// builds its Abseil without NDEBUG, so by default every Lock() of every absl::Mutex recorded the
// locks held in a process-wide graph guarded by one global lock: a nested lock pair cost 122 ns
// instead of 43, and all threads of a process met on that lock. Debug builds keep the check.
inline void ConfigureAbseilMutexes() {
#ifdef NDEBUG
  static const bool configured = [] {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
    return true;
  }();
  (void)configured;
#endif
}
}  // namespace sync_internal

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() { sync_internal::ConfigureAbseilMutexes(); }
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    mu_.Lock();
    sync_internal::Acquire(this);
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    sync_internal::Release(this);
    mu_.Unlock();
  }
  // True (and held) when the mutex was free.
  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) {
    if (!mu_.TryLock()) return false;
    sync_internal::Acquire(this);
    return true;
  }
  void ReaderLock() ABSL_SHARED_LOCK_FUNCTION() {
    mu_.ReaderLock();
    sync_internal::Acquire(this);
  }
  void ReaderUnlock() ABSL_UNLOCK_FUNCTION() {
    sync_internal::Release(this);
    mu_.ReaderUnlock();
  }
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() { mu_.AssertHeld(); }
  void AssertReaderHeld() const ABSL_ASSERT_SHARED_LOCK() { mu_.AssertReaderHeld(); }

  // Releases the mutex until `cond` holds, then returns with it held again.
  void Await(const Condition& cond) ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    Guarded guarded{this, &cond};
    const absl::Condition absl_cond(&Guarded::Eval, &guarded);  // other threads read it
    sync_internal::Release(this);
    mu_.Await(absl_cond);
    sync_internal::Acquire(this);
  }
  // As Await, giving up after `timeout`; returns whether `cond` holds.
  bool AwaitWithTimeout(const Condition& cond, absl::Duration timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    Guarded guarded{this, &cond};
    const absl::Condition absl_cond(&Guarded::Eval, &guarded);
    sync_internal::Release(this);
    const bool holds = mu_.AwaitWithTimeout(absl_cond, timeout);
    sync_internal::Acquire(this);
    return holds;
  }
  // As Await, giving up at `deadline`; returns whether `cond` holds.
  bool AwaitWithDeadline(const Condition& cond, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    Guarded guarded{this, &cond};
    const absl::Condition absl_cond(&Guarded::Eval, &guarded);
    sync_internal::Release(this);
    const bool holds = mu_.AwaitWithDeadline(absl_cond, deadline);
    sync_internal::Acquire(this);
    return holds;
  }

 private:
  friend class CondVar;
  // The user's condition. absl evaluates it with the mutex held, in the waiting thread or in one
  // that is unlocking; the acquire/release pair orders its reads with every other critical
  // section.
  struct Guarded {
    const Mutex* mu;
    const Condition* cond;
    static bool Eval(Guarded* g) {
      sync_internal::Acquire(g->mu);
      const bool holds = g->cond->Eval();
      sync_internal::Release(g->mu);
      return holds;
    }
  };
  absl::Mutex mu_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

class ABSL_SCOPED_LOCKABLE ReaderMutexLock {
 public:
  explicit ReaderMutexLock(Mutex* mu) ABSL_SHARED_LOCK_FUNCTION(mu) : mu_(mu) { mu_->ReaderLock(); }
  ~ReaderMutexLock() ABSL_UNLOCK_FUNCTION() { mu_->ReaderUnlock(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  Mutex* const mu_;
};

class CondVar {
 public:
  // Releases *mu while waiting; returns with it held. True when `deadline` passed first.
  bool WaitWithDeadline(Mutex* mu, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    sync_internal::Release(mu);
    const bool timed_out = cv_.WaitWithDeadline(&mu->mu_, deadline);
    sync_internal::Acquire(mu);
    return timed_out;
  }
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    sync_internal::Release(mu);
    cv_.Wait(&mu->mu_);
    sync_internal::Acquire(mu);
  }
  void Signal() { cv_.Signal(); }
  void SignalAll() { cv_.SignalAll(); }

 private:
  absl::CondVar cv_;
};

}  // namespace yuebing
