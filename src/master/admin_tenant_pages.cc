#include "master/admin_tenant_pages.h"

#include <nlohmann/json.hpp>
#include <vector>

#include "absl/strings/str_cat.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/tenant_key.h"

namespace yuebing::master {
namespace {

using Json = nlohmann::json;

Json ToJson(const TenantQuotaSnapshot& s) {
  return Json{{"tenant_id", s.tenant_id},
              {"requested_quota_bytes", s.requested_quota_bytes},
              {"effective_quota_bytes", s.effective_quota_bytes},
              {"charged_bytes", s.charged_bytes},
              {"admission_closed", s.admission_closed},
              {"over_quota", s.over_quota},
              {"has_explicit_policy", s.has_explicit_policy}};
}

AdminPage Ok(Json data) {
  Json body{{"success", true}};
  if (!data.is_null()) body["data"] = std::move(data);
  return AdminJsonPage(200, body.dump(-1, ' ', false, Json::error_handler_t::replace));
}

// `why`: what CheckTenantId said of the tenant id.
AdminPage BadTenant(const absl::Status& why, const char* what) {
  return AdminErrorPage(
      MakeError(ErrorCode::kInvalidParams, absl::StrCat(what, ": ", why.message())));
}

// Prometheus label value: \ " and newline escaped.
std::string LabelValue(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

AdminPage GetTenantQuotasPage(const MasterService& service, const std::string& tenant) {
  if (tenant.empty()) {
    absl::StatusOr<std::vector<TenantQuotaSnapshot>> list = service.ListTenantQuotas();
    if (!list.ok()) return AdminErrorPage(list.status());
    Json data = Json::array();
    for (const TenantQuotaSnapshot& s : *list) data.push_back(ToJson(s));
    return Ok(std::move(data));
  }
  if (absl::Status bad = CheckTenantId(tenant); !bad.ok()) {
    return BadTenant(bad, "Invalid tenant_id");
  }
  absl::StatusOr<TenantQuotaSnapshot> one = service.GetTenantQuota(tenant);
  if (!one.ok()) return AdminErrorPage(one.status());
  return Ok(ToJson(*one));
}

AdminPage PutTenantQuotaPage(MasterService& service, const std::string& tenant,
                             const std::string& body) {
  if (absl::Status bad = CheckTenantId(tenant); !bad.ok()) {
    return BadTenant(bad, "Missing or invalid tenant_id");
  }
  Json parsed = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return AdminErrorPage(MakeError(ErrorCode::kInvalidParams,
                                    "Invalid JSON body: expected {\"requested_quota_bytes\":N}"));
  }
  uint64_t bytes = 0;
  auto it = parsed.find("requested_quota_bytes");
  if (it != parsed.end()) {
    if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0)) {
      return AdminErrorPage(MakeError(ErrorCode::kInvalidParams,
                                      "Invalid JSON body: requested_quota_bytes is not an "
                                      "unsigned integer"));
    }
    bytes = it->get<uint64_t>();
  }
  absl::StatusOr<TenantQuotaSnapshot> result = service.UpsertTenantQuota(tenant, bytes);
  if (!result.ok()) return AdminErrorPage(result.status());
  return Ok(ToJson(*result));
}

AdminPage DeleteTenantQuotaPage(MasterService& service, const std::string& tenant) {
  if (absl::Status bad = CheckTenantId(tenant); !bad.ok()) {
    return BadTenant(bad, "Missing or invalid tenant_id");
  }
  absl::Status result = service.DeleteTenantQuota(tenant);
  if (!result.ok()) return AdminErrorPage(result);
  return Ok(Json());
}

std::string TenantQuotaMetrics(const MasterService& service) {
  absl::StatusOr<std::vector<TenantQuotaSnapshot>> list = service.ListTenantQuotas();
  if (!list.ok()) return "";
  std::string out;
  auto gauge = [&](const char* name, const char* help, auto value) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " gauge\n");
    for (const TenantQuotaSnapshot& s : *list) {
      absl::StrAppend(&out, name, "{tenant_id=\"", LabelValue(s.tenant_id), "\"} ", value(s), "\n");
    }
  };
  gauge("mooncake_tenant_quota_requested_bytes", "Requested memory quota of each tenant.",
        [](const TenantQuotaSnapshot& s) { return s.requested_quota_bytes; });
  gauge("mooncake_tenant_quota_effective_bytes", "Enforced memory quota of each tenant.",
        [](const TenantQuotaSnapshot& s) { return s.effective_quota_bytes; });
  gauge("mooncake_tenant_quota_charged_bytes", "Memory charged to each tenant.",
        [](const TenantQuotaSnapshot& s) { return s.charged_bytes; });
  gauge("mooncake_tenant_quota_admission_closed", "1 when the tenant's writes are refused.",
        [](const TenantQuotaSnapshot& s) { return s.admission_closed ? 1 : 0; });
  gauge("mooncake_tenant_quota_over_quota", "1 when the tenant holds more than its quota.",
        [](const TenantQuotaSnapshot& s) { return s.over_quota ? 1 : 0; });
  gauge("mooncake_tenant_quota_explicit_policy", "1 when the tenant has a quota policy.",
        [](const TenantQuotaSnapshot& s) { return s.has_explicit_policy ? 1 : 0; });
  // Upstream's two counters (its only reject reason is quota_exceeded).
  auto counter = [&](const char* name, const char* help, const char* labels, auto value) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " counter\n");
    for (const TenantQuotaSnapshot& s : *list) {
      absl::StrAppend(&out, name, "{tenant_id=\"", LabelValue(s.tenant_id), "\"", labels, "} ",
                      value(s), "\n");
    }
  };
  counter("mooncake_tenant_quota_reject_total", "Writes refused for the tenant's quota.",
          ",reason=\"quota_exceeded\"",
          [](const TenantQuotaSnapshot& s) { return s.quota_rejects; });
  counter("mooncake_tenant_evict_bytes_total", "Bytes evicted to keep the tenant within its quota.",
          "", [](const TenantQuotaSnapshot& s) { return s.evicted_bytes; });
  return out;
}

}  // namespace yuebing::master
