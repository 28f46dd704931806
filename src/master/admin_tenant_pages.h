// Bodies of the master's tenant quota admin endpoints (upstream's, served by
// admin_http_server.h; docs/master.md "Tenants and quotas"):
//   GET    /api/v1/tenant_quotas               {"success":true,"data":[snapshot...]} by id
//   GET    /api/v1/tenant_quotas?tenant_id=T   {"success":true,"data":snapshot}
//   PUT    /api/v1/tenant_quotas?tenant_id=T   body {"requested_quota_bytes":N}: creates or
//                                              changes T's policy -> {"success":true,"data":..}
//   DELETE /api/v1/tenant_quotas?tenant_id=T   {"success":true}
// A snapshot is {"tenant_id","requested_quota_bytes","effective_quota_bytes","charged_bytes",
// "admission_closed","over_quota","has_explicit_policy"}. Errors (AdminErrorPage): 400 a bad
// tenant id or body, 404 an unknown tenant, 409 a master without multi-tenancy
// (UNAVAILABLE_IN_CURRENT_MODE) or a tenant that still owns objects (TENANT_NOT_EMPTY), 500 the
// policy file could not be written (PERSISTENT_FAIL).
#pragma once

#include <string>

#include "master/admin_http_pages.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {

// `tenant` empty: the list.
AdminPage GetTenantQuotasPage(const MasterService& service, const std::string& tenant);
AdminPage PutTenantQuotaPage(MasterService& service, const std::string& tenant,
                             const std::string& body);
AdminPage DeleteTenantQuotaPage(MasterService& service, const std::string& tenant);
// Prometheus lines of the tenant gauges (none without multi-tenancy).
std::string TenantQuotaMetrics(const MasterService& service);

}  // namespace yuebing::master
