// Bodies of the master's drain-job admin endpoints (Mooncake's, served by admin_http_server.h):
//   POST /api/v1/drain_jobs        body {"segments":[..],"target_segments":[..],
//                                  "max_concurrency":N} -> {"success":true,"job_id":"..",
//                                  "status":"CREATED"}
//   GET  /api/v1/drain_jobs/query?job_id=ID    the job: {"success":true,"job_id",..,"type":0,
//                                  "type_name":"DRAIN","status":N,"status_name":"RUNNING",
//                                  "created_at_ms_epoch","last_updated_at_ms_epoch","segments",
//                                  "succeeded_units","failed_units","blocked_units",
//                                  "active_units","migrated_bytes","message"}
//   POST /api/v1/drain_jobs/cancel?job_id=ID   {"success":true,"job_id":..,"status":"CANCELED"}
//   GET  /api/v1/segments/status?segment=S     {"success":true,"segment":S,"status":N,
//                                  "status_name":"DRAINING"}
// Errors are {"success":false,"error_code":N,"error_message":"NAME: detail"} with upstream's
// HTTP status: 400 bad request (INVALID_PARAMS), 404 (JOB_NOT_FOUND, SEGMENT_NOT_FOUND), 409
// (UNAVAILABLE_IN_CURRENT_STATUS), 500 otherwise.
#pragma once

#include <string>

#include "master/admin_http_pages.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {

AdminPage CreateDrainJobPage(MasterService& service, const std::string& body);
AdminPage QueryDrainJobPage(MasterService& service, const std::string& job_id);
AdminPage CancelDrainJobPage(MasterService& service, const std::string& job_id);
AdminPage SegmentStatusPage(MasterService& service, const std::string& segment);

}  // namespace yuebing::master
