// LongPolls: calls parked until there is something to answer or their deadline passes (the
// master's PullJournal). A parked call is an Attempt: a function that tries to answer and
// finish the call and says whether it did; with must_finish it has to (deadline passed, or the
// server is stopping). One thread retries parked calls when Notify() says something changed and
// finishes them at their deadlines.
//
// The thread is woken only when it has something to do: a change (Notify), or a change that came
// between a call's failed attempt and its Park (Changes() says which). It wakes by itself at
// least once per tick (kTick) and then sleeps until the earliest deadline or the next tick, so a
// call parked with a deadline after the thread's next wake-up does not wake it and is still
// finished at its deadline (a journal poll parked after every put woke it, three times per put,
// on a 2-core machine where each wake-up is a context switch the put waits behind).
//
// Thread safety: every method is thread-safe. Notify() only signals, so it may be called under
// other locks. Attempts run on the poll thread (or the caller of Park() once stopped), with no
// lock of this class held.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "yuebing/common/mutex.h"

namespace yuebing::master {

class LongPolls {
 public:
  using Attempt = std::function<bool(bool must_finish)>;
  using Clock = std::chrono::steady_clock;
  // The longest the poll thread sleeps.
  static constexpr std::chrono::milliseconds kTick{100};

  // `tick`: the longest the poll thread sleeps (kTick; tests give another).
  explicit LongPolls(std::chrono::milliseconds tick = kTick);
  ~LongPolls();  // Stop()
  LongPolls(const LongPolls&) = delete;
  LongPolls& operator=(const LongPolls&) = delete;

  // How many changes (Notify, RunNow) have been announced so far. Read it before the attempt
  // that failed and hand it to Park.
  uint64_t Changes();
  // Parks a call until Notify() lets `attempt` succeed or `deadline` passes. `changes_seen`:
  // Changes() read before the call's last attempt; if a change was announced since, the poll
  // thread retries the call at once. After Stop() the attempt runs at once with must_finish.
  void Park(Attempt attempt, Clock::time_point deadline, uint64_t changes_seen);
  // Announces a change: the poll thread retries every parked call.
  void Notify();
  // Announces a change and tries every parked call now, on the calling thread (must hold no lock
  // the attempts take). Called after an RPC that changed what parked calls wait for, before its
  // own reply is sent, so their answers leave no later than that reply.
  void RunNow();
  // How many times the poll thread has woken up (for tests).
  uint64_t Wakeups();
  // Finishes every parked call and refuses to park more; joins the thread. Idempotent.
  void Stop();

 private:
  struct Parked {
    Attempt attempt;
    Clock::time_point deadline;
  };
  void Loop();
  // Wakes the poll thread if it must retry the calls (a change since `changes_seen`) or must
  // wake before it would for a call due at `deadline`.
  void WakeIfNeeded(uint64_t changes_seen, Clock::time_point deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::chrono::milliseconds tick_;
  yuebing::Mutex mu_;
  yuebing::CondVar cv_;
  std::vector<Parked> parked_ ABSL_GUARDED_BY(mu_);
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t changes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t wakeups_ ABSL_GUARDED_BY(mu_) = 0;
  // When the poll thread wakes by itself next; min() while it is awake (it looks at every parked
  // call before it sleeps again).
  Clock::time_point sleeping_until_ ABSL_GUARDED_BY(mu_) = Clock::time_point::min();
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace yuebing::master
