// LongPolls: calls parked until there is something to answer or their deadline passes (the
// master's PullJournal). A parked call is an Attempt: a function that tries to answer and
// finish the call and says whether it did; with must_finish it has to (deadline passed, or the
// server is stopping). One thread retries parked calls when Notify() says something changed and
// finishes them at their deadlines.
//
// Thread safety: every method is thread-safe. Notify() only signals, so it may be called under
// other locks. Attempts run on the poll thread (or the caller of Park() once stopped), with no
// lock of this class held.
#pragma once

#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "yuebing/common/mutex.h"

namespace yuebing::master {

class LongPolls {
 public:
  using Attempt = std::function<bool(bool must_finish)>;
  using Clock = std::chrono::steady_clock;

  LongPolls();
  ~LongPolls();  // Stop()
  LongPolls(const LongPolls&) = delete;
  LongPolls& operator=(const LongPolls&) = delete;

  // Parks a call until Notify() lets `attempt` succeed or `deadline` passes. After Stop() the
  // attempt runs at once with must_finish.
  void Park(Attempt attempt, Clock::time_point deadline);
  void Notify();
  // Tries every parked call now, on the calling thread (must hold no lock the attempts take).
  // Called after an RPC that changed what parked calls wait for, before its own reply is sent,
  // so their answers leave no later than that reply.
  void RunNow();
  // Finishes every parked call and refuses to park more; joins the thread. Idempotent.
  void Stop();

 private:
  struct Parked {
    Attempt attempt;
    Clock::time_point deadline;
  };
  void Loop();

  yuebing::Mutex mu_;
  yuebing::CondVar cv_;
  std::vector<Parked> parked_ ABSL_GUARDED_BY(mu_);
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace yuebing::master
