#include "master/admin_drain_pages.h"

#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "yuebing/common/error_code.h"

namespace yuebing::master {
namespace {

using Json = nlohmann::json;

AdminPage JsonPage(int status, const Json& body) { return AdminJsonPage(status, body.dump()); }

AdminPage ErrorPage(const absl::Status& status) { return AdminErrorPage(status); }

AdminPage BadRequest(const std::string& message) {
  return ErrorPage(MakeError(ErrorCode::kInvalidParams, message));
}

// A JSON array of strings at `field` (absent: empty); false when it is anything else.
bool StringList(const Json& body, const char* field, std::vector<std::string>* out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return true;
  if (!it->is_array()) return false;
  for (const Json& item : *it) {
    if (!item.is_string()) return false;
    out->push_back(item.get<std::string>());
  }
  return true;
}

}  // namespace

AdminPage CreateDrainJobPage(MasterService& service, const std::string& body) {
  Json request = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded() || !request.is_object()) {
    return BadRequest("Invalid JSON body: expected an object");
  }
  DrainJobRequest job;
  if (!StringList(request, "segments", &job.segments) ||
      !StringList(request, "target_segments", &job.target_segments)) {
    return BadRequest("Invalid JSON body: segments and target_segments are lists of names");
  }
  if (auto it = request.find("max_concurrency"); it != request.end() && !it->is_null()) {
    if (!it->is_number_unsigned() || it->get<uint64_t>() > UINT32_MAX) {
      return BadRequest("Invalid JSON body: max_concurrency is a non-negative integer");
    }
    job.max_concurrency = it->get<uint32_t>();
  }
  absl::StatusOr<std::string> id = service.CreateDrainJob(job);
  if (!id.ok()) return ErrorPage(id.status());
  return JsonPage(200, Json{{"success", true}, {"job_id", *id}, {"status", "CREATED"}});
}

AdminPage QueryDrainJobPage(MasterService& service, const std::string& job_id) {
  if (job_id.empty()) return BadRequest("Missing or invalid job_id");
  absl::StatusOr<DrainJobInfo> job = service.QueryDrainJob(job_id);
  if (!job.ok()) return ErrorPage(job.status());
  return JsonPage(200, Json{{"success", true},
                            {"job_id", job->id},
                            {"type", 0},
                            {"type_name", "DRAIN"},
                            {"status", static_cast<int32_t>(job->status)},
                            {"status_name", DrainJobStatusName(job->status)},
                            {"created_at_ms_epoch", job->created_at_ms},
                            {"last_updated_at_ms_epoch", job->last_updated_at_ms},
                            {"segments", job->segments},
                            {"succeeded_units", job->succeeded_units},
                            {"failed_units", job->failed_units},
                            {"blocked_units", job->blocked_units},
                            {"active_units", job->active_units},
                            {"migrated_bytes", job->migrated_bytes},
                            {"message", job->message},
                            {"error_code", 0},
                            {"error_message", ""}});
}

AdminPage CancelDrainJobPage(MasterService& service, const std::string& job_id) {
  if (job_id.empty()) return BadRequest("Missing or invalid job_id");
  absl::Status canceled = service.CancelDrainJob(job_id);
  if (!canceled.ok()) return ErrorPage(canceled);
  return JsonPage(200, Json{{"success", true}, {"job_id", job_id}, {"status", "CANCELED"}});
}

AdminPage SegmentStatusPage(MasterService& service, const std::string& segment) {
  if (segment.empty()) return BadRequest("Missing segment query parameter");
  absl::StatusOr<SegmentStatus> status = service.QuerySegmentStatus(segment);
  if (!status.ok()) return ErrorPage(status.status());
  return JsonPage(200, Json{{"success", true},
                            {"segment", segment},
                            {"status", static_cast<int32_t>(*status)},
                            {"status_name", SegmentStatusName(*status)}});
}

}  // namespace yuebing::master
