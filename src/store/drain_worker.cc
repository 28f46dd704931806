#include "store/drain_worker.h"

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/logging.h"

namespace yuebing::store {

DrainWorker::DrainWorker(const master::ClientId& id, ObjectClient* objects, MasterApi* master)
    : id_(id), objects_(objects), master_(master), thread_([this] { Run(); }) {}

DrainWorker::~DrainWorker() {
  {
    yuebing::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

bool DrainWorker::Sleep(std::chrono::milliseconds period) {
  yuebing::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(yuebing::Condition(&stopping_), absl::FromChrono(period));
  return stopping_;
}

void DrainWorker::Run() {
  while (!Sleep(std::chrono::milliseconds(0))) {
    absl::StatusOr<std::vector<master::DrainUnit>> units =
        master_->FetchDrainWork(id_, kDrainUnitsPerFetch);
    if (!units.ok() || units->empty()) {
      if (!units.ok()) YB_LOG_DEBUG("drain: fetching work: {}", units.status().ToString());
      if (Sleep(kDrainIdlePoll)) return;
      continue;
    }
    for (const master::DrainUnit& unit : *units) {
      if (Sleep(std::chrono::milliseconds(0))) return;  // the rest are handed out again later
      absl::Status outcome;
      absl::StatusOr<master::CopyPlan> plan =
          objects_->StartCopy(unit.key, unit.source, {unit.target}, /*move=*/true);
      outcome = plan.ok() ? objects_->FinishCopy(unit.key, *plan) : plan.status();
      // Removed (or evicted) since it was handed out: nothing is left on the segment to move.
      if (ToErrorCode(outcome) == ErrorCode::kObjectNotFound) outcome = absl::OkStatus();
      if (!outcome.ok()) {
        YB_LOG_WARN("drain job {}: moving '{}' from {} to {}: {}", unit.job_id, unit.key,
                    unit.source, unit.target, outcome.ToString());
      }
      absl::Status reported = master_->ReportDrainWork(id_, unit.job_id, unit.key, outcome);
      if (!reported.ok()) YB_LOG_DEBUG("drain: reporting '{}': {}", unit.key, reported.ToString());
    }
  }
}

}  // namespace yuebing::store
