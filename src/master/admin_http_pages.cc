#include "master/admin_http_pages.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/limits.h"
#include "yuebing/common/tenant_key.h"

namespace yuebing::master {

AdminPage AdminErrorPage(const absl::Status& status) {
  const ErrorCode code = ToErrorCode(status);
  int http = 500;
  switch (code) {
    case ErrorCode::kInvalidParams:
      http = 400;
      break;
    case ErrorCode::kJobNotFound:
    case ErrorCode::kSegmentNotFound:
    case ErrorCode::kObjectNotFound:
    case ErrorCode::kTenantNotRegistered:
      http = 404;
      break;
    case ErrorCode::kUnavailableInCurrentStatus:
    case ErrorCode::kUnavailableInCurrentMode:
    case ErrorCode::kTenantNotEmpty:
      http = 409;
      break;
    default:
      break;
  }
  std::string body = absl::StrCat("{\"success\":false,\"error_code\":", static_cast<int32_t>(code),
                                  ",\"error_message\":");
  AppendJsonString(&body, absl::StrCat(ErrorCodeName(code), ": ", status.message()));
  body += "}";
  return AdminJsonPage(http, std::move(body));
}
namespace {

// Mounted segments sorted by name, so that pages are stable.
std::vector<SegmentUsage> SortedSegments(const MasterService& service) {
  std::vector<SegmentUsage> segments = service.Stats().segments;
  std::sort(segments.begin(), segments.end(), [](const SegmentUsage& a, const SegmentUsage& b) {
    return a.segment.name < b.segment.name;
  });
  return segments;
}

void AppendDescriptor(std::string* out, const Replica& replica) {
  absl::StrAppend(out, "{\"size_\":", replica.size, ",\"buffer_address_\":", replica.address,
                  ",\"protocol_\":\"\",\"transport_endpoint_\":");
  AppendJsonString(out, replica.segment_name);
  out->push_back('}');
}

// Appends the memory replicas of `location` as a JSON array of descriptors.
void AppendMemoryReplicas(std::string* out, const ObjectLocation& location) {
  out->push_back('[');
  bool first = true;
  for (const Replica& replica : location.replicas) {
    if (!replica.disk_endpoint.empty()) continue;
    if (!first) out->push_back(',');
    first = false;
    AppendDescriptor(out, replica);
  }
  out->push_back(']');
}

AdminPage Json(int status, std::string body) {
  return AdminPage{status, kAdminJsonType, std::move(body), false};
}

AdminPage Text(int status, std::string body) {
  return AdminPage{status, kAdminTextType, std::move(body), false};
}

}  // namespace

void AppendJsonString(std::string* out, const std::string& text) {
  out->push_back('"');
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (c < 0x20) {
          absl::StrAppendFormat(out, "\\u%04x", c);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

AdminPage AllSegmentsPage(const MasterService& service) {
  std::string body;
  for (const SegmentUsage& usage : SortedSegments(service)) {
    absl::StrAppend(&body, usage.segment.name, "\n");
  }
  return Text(200, std::move(body));
}

AdminPage AllKeysPage(const MasterService& service, size_t limit, const std::string& tenant) {
  if (!tenant.empty() && !CheckTenantId(tenant).ok()) return Text(400, "Invalid tenant_id\n");
  bool truncated = false;
  const std::vector<std::string> keys =
      service.ListKeys(limit, &truncated, TenantOrDefault(tenant));
  std::string body;
  for (const std::string& key : keys) absl::StrAppend(&body, key, "\n");
  AdminPage page = Text(200, std::move(body));
  page.truncated = truncated;
  return page;
}

AdminPage QueryKeyPage(const MasterService& service, const std::string& key,
                       const std::string& tenant) {
  const absl::Status bad_tenant = tenant.empty() ? absl::OkStatus() : CheckTenantId(tenant);
  absl::StatusOr<ObjectLocation> location =
      bad_tenant.ok() ? service.QueryReplicas(ScopedKey(TenantOrDefault(tenant), key))
                      : absl::StatusOr<ObjectLocation>(bad_tenant);
  std::string body;
  if (!location.ok()) {
    const ErrorCode code = ToErrorCode(location.status());
    absl::StrAppend(&body, "{\"success\":false,\"error_code\":", static_cast<int32_t>(code),
                    ",\"error_message\":");
    AppendJsonString(&body, ErrorCodeName(code));
    body.push_back('}');
    return Json(404, std::move(body));
  }
  body = "{\"success\":true,\"data\":";
  AppendMemoryReplicas(&body, *location);
  body.push_back('}');
  return Json(200, std::move(body));
}

AdminPage BatchQueryKeysPage(const MasterService& service, const std::string& keys_param,
                             const std::string& tenant) {
  if (!tenant.empty() && !CheckTenantId(tenant).ok()) {
    return Json(400, "{\"success\":false,\"error\":\"Invalid tenant_id\"}");
  }
  if (keys_param.empty()) {
    return Json(400, "{\"success\":false,\"error\":\"No keys provided. Use ?keys=key1,key2,...\"}");
  }
  std::vector<std::string> keys = absl::StrSplit(keys_param, ',');
  if (keys.size() > limits::kMaxBatchKeys) {
    return Json(400, absl::StrCat("{\"success\":false,\"error\":\"At most ", limits::kMaxBatchKeys,
                                  " keys per request\"}"));
  }
  // Like upstream's JSON object, each key appears once, in sorted order.
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::string body = "{\"success\":true,\"data\":{";
  bool first = true;
  for (const std::string& key : keys) {
    if (!first) body.push_back(',');
    first = false;
    AppendJsonString(&body, key);
    body.push_back(':');
    absl::StatusOr<ObjectLocation> location =
        service.QueryReplicas(ScopedKey(TenantOrDefault(tenant), key));
    if (!location.ok()) {
      body += "{\"ok\":false,\"error\":";
      AppendJsonString(&body, ErrorCodeName(ToErrorCode(location.status())));
      body.push_back('}');
      continue;
    }
    body += "{\"ok\":true,\"values\":";
    AppendMemoryReplicas(&body, *location);
    // A disk-tier copy is held by one store and read through its engine: upstream's closest
    // kind is the "local disk" replica.
    bool disk_first = true;
    for (const Replica& replica : location->replicas) {
      if (replica.disk_endpoint.empty()) continue;
      body += disk_first ? ",\"local_disk_values\":[" : ",";
      disk_first = false;
      absl::StrAppend(&body, "{\"client_id\":\"\",\"object_size\":", replica.size,
                      ",\"transport_endpoint\":");
      AppendJsonString(&body, replica.disk_endpoint);
      body.push_back('}');
    }
    if (!disk_first) body.push_back(']');
    body.push_back('}');
  }
  body += "}}";
  return Json(200, std::move(body));
}

AdminPage QuerySegmentPage(const MasterService& service, const std::string& segment) {
  for (const SegmentUsage& usage : service.Stats().segments) {
    if (usage.segment.name != segment) continue;
    return Text(200, absl::StrCat(segment, "\nUsed(bytes): ", usage.used_bytes,
                                  "\nCapacity(bytes): ", usage.segment.size, "\n"));
  }
  return Text(500, absl::StrCat("Failed to query segment ", segment, "\n"));
}

AdminPage SegmentsDetailPage(const MasterService& service) {
  const std::vector<SegmentUsage> segments = SortedSegments(service);
  std::string body = absl::StrCat("{\"total_segments\":", segments.size(), ",\"segments\":[");
  bool first = true;
  for (const SegmentUsage& usage : segments) {
    if (!first) body.push_back(',');
    first = false;
    const uint64_t size = usage.segment.size;
    body += "{\"segment_name\":";
    AppendJsonString(&body, usage.segment.name);
    // The master identifies a mount by its epoch; upstream shows a segment UUID here.
    absl::StrAppend(&body, ",\"segment_id\":\"", usage.epoch, "\",\"client_id\":");
    AppendJsonString(&body, usage.client_id);
    absl::StrAppendFormat(&body, ",\"base_address\":\"0x%x\",\"size_bytes\":%d", usage.segment.base,
                          size);
    absl::StrAppendFormat(&body, ",\"size_human\":\"%g GiB\",\"te_endpoint\":",
                          static_cast<double>(size) / (1024.0 * 1024.0 * 1024.0));
    AppendJsonString(&body, usage.segment.name);
    absl::StrAppendFormat(
        &body,
        ",\"protocol\":\"\",\"status\":\"OK\",\"allocator_used_bytes\":%d,"
        "\"allocator_capacity_bytes\":%d,\"allocator_usage_percent\":%g}",
        usage.used_bytes, size,
        size > 0 ? 100.0 * static_cast<double>(usage.used_bytes) / static_cast<double>(size) : 0.0);
  }
  body += "]}";
  return Json(200, std::move(body));
}

}  // namespace yuebing::master
