// DrainWorker: a segment owner's part in drain jobs (docs/master.md "Drain"). It asks the master
// for moves of objects off this client's draining segments (FetchDrainWork), makes each with the
// object client (a replica move: ReplicaCopyStart, the bytes written to the target, ReplicaCopyEnd)
// and reports the outcome (ReportDrainWork). It polls every kDrainIdlePoll while there is no work,
// and at once again while there is.
//
// Thread safety: owns one thread; the destructor stops it (a move under way is finished first).
// `objects` and `master` must outlive it.
#pragma once

#include <chrono>
#include <thread>

#include "store/master_api.h"
#include "store/object_client.h"
#include "yuebing/common/mutex.h"
#include "yuebing/master/types.h"

namespace yuebing::store {

inline constexpr std::chrono::milliseconds kDrainIdlePoll{500};
// Moves asked for per FetchDrainWork.
inline constexpr uint32_t kDrainUnitsPerFetch = 16;

class DrainWorker {
 public:
  DrainWorker(const master::ClientId& id, ObjectClient* objects, MasterApi* master);
  ~DrainWorker();
  DrainWorker(const DrainWorker&) = delete;
  DrainWorker& operator=(const DrainWorker&) = delete;

 private:
  void Run();
  // Waits `period` or until stopping; returns whether stopping.
  bool Sleep(std::chrono::milliseconds period);

  const master::ClientId id_;
  ObjectClient* const objects_;
  MasterApi* const master_;
  yuebing::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: started once the rest is set up
};

}  // namespace yuebing::store
