// Bodies of the master's Mooncake-compatible admin HTTP pages (served by admin_http_server.h).
// Each function reads the MasterService without side effects (no read lease, no access
// recorded) and returns the status code, content type and body upstream's master answers with:
//   /get_all_segments     text, one mounted segment name a line
//   /get_all_keys         text, one key a line (capped at kMaxListedKeys, see below)
//   /query_key?key=K      JSON {"success":true,"data":[descriptor...]} of the memory replicas;
//                         any error (no such key, missing or bad key) is 404 with
//                         {"success":false,"error_code":N,"error_message":"NAME"}
//   /batch_query_keys?keys=a,b  JSON {"success":true,"data":{"a":{"ok":true,"values":[...]},
//                         "b":{"ok":false,"error":"OBJECT_NOT_FOUND"}}}; no keys: 400
//   /query_segment?segment=S   text "S\nUsed(bytes): U\nCapacity(bytes): C\n"; unknown: 500
// The key pages show the "default" tenant's keys, as upstream's; yuebing's `tenant_id=T`
// parameter shows T's (yuebing/common/tenant_key.h).
//   /get_segments_detail  JSON {"total_segments":N,"segments":[{...}]}
// A replica descriptor is {"size_":..,"buffer_address_":..,"protocol_":"","transport_endpoint_":
// "<segment name>"}: the master does not know the transport protocol, so protocol_ is empty.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {

// /get_all_keys lists at most this many keys (upstream lists all): a bigger listing would hold a
// multi-hundred-MB body in memory. A capped answer carries the header
// "X-Yuebing-Keys-Truncated: true".
inline constexpr size_t kMaxListedKeys = size_t{1} << 20;

struct AdminPage {
  int status = 200;
  std::string content_type;
  std::string body;
  bool truncated = false;  // /get_all_keys only
};

inline constexpr const char* kAdminTextType = "text/plain; version=0.0.4";
inline constexpr const char* kAdminJsonType = "application/json; charset=utf-8";

AdminPage AllSegmentsPage(const MasterService& service);
// `tenant`: whose keys (yuebing's `tenant_id` parameter; empty: "default", as upstream, whose
// pages show only that tenant's). A bad tenant id is 400 (/query_key: 404 with -600).
AdminPage AllKeysPage(const MasterService& service, size_t limit = kMaxListedKeys,
                      const std::string& tenant = "");
AdminPage QueryKeyPage(const MasterService& service, const std::string& key,
                       const std::string& tenant = "");
// `keys` is the raw comma-separated list (already URL-decoded).
AdminPage BatchQueryKeysPage(const MasterService& service, const std::string& keys,
                             const std::string& tenant = "");
AdminPage QuerySegmentPage(const MasterService& service, const std::string& segment);
AdminPage SegmentsDetailPage(const MasterService& service);

inline AdminPage AdminJsonPage(int status, std::string body) {
  return AdminPage{status, kAdminJsonType, std::move(body), false};
}
// Upstream's error answer {"success":false,"error_code":N,"error_message":"NAME: detail"} with
// its HTTP status: 400 (INVALID_PARAMS), 404 (JOB_NOT_FOUND, SEGMENT_NOT_FOUND,
// OBJECT_NOT_FOUND, TENANT_NOT_REGISTERED), 409 (UNAVAILABLE_IN_CURRENT_STATUS / _MODE,
// TENANT_NOT_EMPTY), 500 otherwise.
AdminPage AdminErrorPage(const absl::Status& status);

// Appends `text` as a JSON string literal (quoted, escaped).
void AppendJsonString(std::string* out, const std::string& text);

}  // namespace yuebing::master
