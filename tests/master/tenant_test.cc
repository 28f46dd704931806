// Tenants on the master: scoped keys kept apart, the policy file's grammar, quota accounts
// (scaling when memory is short), and a multi-tenant MasterService admitting, charging,
// refunding and evicting per tenant. Driven with a FakeClock and the MasterService API directly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "master/tenant_policy.h"
#include "master/tenant_quotas.h"
#include "yuebing/common/clock.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/tenant_key.h"
#include "yuebing/master/master_service.h"

namespace yuebing::master {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr uint64_t kBase = 0x100000;
constexpr uint64_t kKiB = 1024;

ErrorCode Code(const absl::Status& status) { return ToErrorCode(status); }
template <typename T>
ErrorCode Code(const absl::StatusOr<T>& result) {
  return ToErrorCode(result.status());
}

TEST(TenantKeyTest, ScopedKeysAreOneToOne) {
  EXPECT_EQ(ScopedKey("default", "k"), "k");
  const std::string a = ScopedKey("a", "k");
  EXPECT_EQ(a, std::string("\0a\0k", 4));
  EXPECT_EQ(SplitScopedKey(a).tenant, "a");
  EXPECT_EQ(SplitScopedKey(a).key, "k");
  EXPECT_EQ(SplitScopedKey("k").tenant, "default");
  // A default key starting with NUL cannot pass for another tenant's.
  const std::string nul_key("\0a\0k", 4);
  const std::string scoped = ScopedKey("default", nul_key);
  EXPECT_NE(scoped, a);
  EXPECT_EQ(SplitScopedKey(scoped).tenant, "default");
  EXPECT_EQ(SplitScopedKey(scoped).key, nul_key);
  // Keys may hold NULs after the tenant.
  EXPECT_EQ(SplitScopedKey(ScopedKey("t", nul_key)).key, nul_key);
  EXPECT_TRUE(CheckTenantId("tenant:with:colon").ok());
  for (const std::string& bad : {std::string(), std::string("_system"), std::string("a\nb"),
                                 std::string("a\x7f"), std::string(129, 'x')}) {
    EXPECT_EQ(Code(CheckTenantId(bad)), ErrorCode::kInvalidParams) << bad;
  }
}

TEST(TenantPolicyTest, ParsesUpstreamsGrammar) {
  EXPECT_EQ(ParseTenantQuota("200GB").value_or(0), 200ull << 30);
  EXPECT_EQ(ParseTenantQuota("12345").value_or(0), 12345u);
  EXPECT_EQ(ParseTenantQuota("3KB").value_or(0), 3072u);
  for (const char* bad : {"", "0", "1XB", "1kb", "1.5GB", " 1", "-1", "9223372036854775808",
                          "18446744073709551616", "18446744073709551615TB"}) {
    EXPECT_EQ(Code(ParseTenantQuota(bad)), ErrorCode::kInvalidParams) << bad;
  }
  auto policy = ParseTenantPolicy(
      "version: 1\n\ntenants:\n  - name: tenant-a\n    quota: 200GB\n"
      "  - name: \"b\"\n    quota: 12\n");
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ(policy->at("tenant-a"), 200ull << 30);
  EXPECT_EQ(policy->at("b"), 12u);
  EXPECT_TRUE(
      ParseTenantPolicy("version: 1\ntenants: []\n").value_or(TenantPolicy{{"x", 1}}).empty());
  const std::pair<const char*, const char*> bad[] = {
      {"version: 2\ntenants: []\n", "unsupported tenant quota policy version"},
      {"tenants: []\n", "version is required"},
      {"version: 1\n", "tenants"},
      {"version: 1\ntenants:\n  - name: _x\n    quota: 1\n", "invalid tenant name"},
      {"version: 1\ntenants:\n  - name: a\n    quota: 1\n  - name: a\n    quota: 2\n",
       "duplicate tenant name"},
      {"version: 1\ntenants:\n  - name: a\n", "quota is required"},
      {"version: [1\n", "invalid YAML"},
  };
  for (const auto& [text, why] : bad) {
    auto parsed = ParseTenantPolicy(text);
    EXPECT_EQ(Code(parsed), ErrorCode::kInvalidParams) << text;
    EXPECT_THAT(parsed.status().message(), HasSubstr(why)) << text;
  }
  // What is written reads back the same, odd names included.
  const TenantPolicy odd{{"a \"quoted\" \\ name", 7}, {"plain", 1ull << 40}};
  EXPECT_EQ(ParseTenantPolicy(FormatTenantPolicy(odd)).value_or(TenantPolicy{}), odd);
  EXPECT_EQ(FormatTenantPolicy({}), "version: 1\n\ntenants: []\n");
}

TEST(TenantQuotasTest, ScalesQuotasWhenMemoryIsShort) {
  TenantQuotas quotas({{"a", 200}, {"b", 400}}, "");
  const uint32_t a = quotas.Intern("a");
  const uint32_t b = quotas.Intern("b");
  EXPECT_EQ(quotas.Get("a", 1000)->effective_quota_bytes, 200u);
  EXPECT_EQ(quotas.Get("a", 300)->effective_quota_bytes, 100u);
  EXPECT_EQ(quotas.Get("b", 300)->effective_quota_bytes, 200u);
  // Leftover bytes go to the largest remainders: 100 * 200 / 600 = 33.3, 100 * 400 / 600 = 66.7.
  EXPECT_EQ(quotas.Get("a", 100)->effective_quota_bytes, 33u);
  EXPECT_EQ(quotas.Get("b", 100)->effective_quota_bytes, 67u);
  uint64_t deficit = 0;
  EXPECT_TRUE(quotas.TryCharge(a, 100, 300, &deficit).ok());
  EXPECT_EQ(Code(quotas.TryCharge(a, 1, 300, &deficit)), ErrorCode::kTenantQuotaExceeded);
  EXPECT_EQ(deficit, 1u);
  EXPECT_TRUE(quotas.TryCharge(a, 0, 300, &deficit).ok());  // registered: 0 bytes always pass
  quotas.Refund(a, 40);
  EXPECT_TRUE(quotas.TryCharge(a, 40, 300, &deficit).ok());
  EXPECT_TRUE(quotas.TryCharge(b, 200, 300, &deficit).ok());
  const uint32_t stranger = quotas.Intern("c");
  EXPECT_EQ(Code(quotas.TryCharge(stranger, 0, 300, &deficit)), ErrorCode::kTenantNotRegistered);
  EXPECT_EQ(Code(quotas.Get("c", 300)), ErrorCode::kObjectNotFound);
  std::vector<std::string> listed;
  for (const TenantQuotaSnapshot& s : quotas.List(300)) listed.push_back(s.tenant_id);
  EXPECT_THAT(listed, ElementsAre("a", "b"));
}

class MultiTenantMasterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/tenant_policy_" + std::to_string(::getpid()) + ".yaml";
    MasterOptions options;
    options.num_shards = 4;
    options.client_ttl = 10s;
    options.allocation_alignment = 64;
    options.multi_tenant = true;
    options.tenant_quotas = {{"a", 8 * kKiB}, {"b", 64 * kKiB}};
    options.tenant_policy_path = path_;
    master_ = std::make_unique<MasterService>(options, clock_);
    ASSERT_TRUE(master_->MountSegment("store", Segment{"seg", kBase, 256 * kKiB}).ok());
  }
  void TearDown() override { std::remove(path_.c_str()); }

  absl::Status Put(const std::string& tenant, const std::string& key, uint64_t size,
                   bool hard_pin = false) {
    ReplicateConfig config;
    config.with_hard_pin = hard_pin;
    const std::string scoped = ScopedKey(tenant, key);
    auto replicas = master_->PutStart("writer", scoped, size, config);
    if (!replicas.ok()) return replicas.status();
    return master_->PutEnd("writer", scoped, 0);
  }
  uint64_t Charged(const std::string& tenant) {
    auto snapshot = master_->GetTenantQuota(tenant);
    return snapshot.ok() ? snapshot->charged_bytes : 0;
  }

  FakeClock clock_;
  std::string path_;
  std::unique_ptr<MasterService> master_;
};

TEST_F(MultiTenantMasterTest, WritesNeedAPolicyAndFitTheQuota) {
  EXPECT_EQ(Code(Put("nobody", "k", kKiB)), ErrorCode::kTenantNotRegistered);
  EXPECT_EQ(Code(Put("default", "k", kKiB)), ErrorCode::kTenantNotRegistered);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(Put("a", "pin" + std::to_string(i), kKiB, true).ok());
  EXPECT_EQ(Charged("a"), 8 * kKiB);
  // Pinned objects cannot be evicted for it: refused, nothing charged.
  EXPECT_EQ(Code(Put("a", "more", kKiB)), ErrorCode::kTenantQuotaExceeded);
  EXPECT_EQ(Charged("a"), 8 * kKiB);
  EXPECT_TRUE(Put("b", "more", kKiB).ok());
  // Removal refunds.
  ASSERT_TRUE(master_->Remove(ScopedKey("a", "pin0"), /*force=*/true).ok());
  EXPECT_EQ(Charged("a"), 7 * kKiB);
  EXPECT_TRUE(Put("a", "more", kKiB).ok());
  // A revoked put refunds its reservation.
  ASSERT_TRUE(master_->Remove(ScopedKey("a", "more"), true).ok());
  ASSERT_TRUE(master_->PutStart("writer", ScopedKey("a", "rev"), kKiB, {}).ok());
  EXPECT_EQ(Charged("a"), 8 * kKiB);
  ASSERT_TRUE(master_->PutRevoke("writer", ScopedKey("a", "rev")).ok());
  EXPECT_EQ(Charged("a"), 7 * kKiB);
}

TEST_F(MultiTenantMasterTest, OverQuotaEvictsOnlyTheTenantsOwnObjects) {
  ASSERT_TRUE(Put("b", "other", 4 * kKiB).ok());
  for (int i = 0; i < 32; ++i) {
    ASSERT_TRUE(Put("a", "k" + std::to_string(i), kKiB).ok()) << i;
    EXPECT_LE(Charged("a"), 8 * kKiB);
  }
  EXPECT_TRUE(master_->Exist(ScopedKey("a", "k31")));
  EXPECT_FALSE(master_->Exist(ScopedKey("a", "k0")));
  EXPECT_TRUE(master_->Exist(ScopedKey("b", "other")));
  EXPECT_EQ(Charged("b"), 4 * kKiB);
  // Upstream's counters: every put went through after evicting the tenant's own objects.
  const TenantQuotaSnapshot a = master_->GetTenantQuota("a").value();
  EXPECT_EQ(a.quota_rejects, 0u);
  EXPECT_GE(a.evicted_bytes, 24 * kKiB);  // at least k0..k23 went (31 + 1 puts, 8 KiB quota)
  EXPECT_EQ(master_->GetTenantQuota("b").value().evicted_bytes, 0u);
}

TEST_F(MultiTenantMasterTest, CopiesAreAdmittedMovesAreNot) {
  ASSERT_TRUE(master_->MountSegment("store2", Segment{"seg2", kBase * 16, 256 * kKiB}).ok());
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(Put("a", "pin" + std::to_string(i), kKiB, true).ok());
  const std::string key = ScopedKey("a", "pin0");
  auto where = master_->GetReplicaList(key);
  ASSERT_TRUE(where.ok());
  ASSERT_TRUE(master_->ReleaseLeases({where->lease_id}).ok());
  const std::string from = where->replicas[0].segment_name;
  const std::string to = from == "seg" ? "seg2" : "seg";
  // Hard-pinned objects cannot go: a put over the quota is refused in the end, and counted.
  EXPECT_EQ(Code(Put("a", "over", kKiB)), ErrorCode::kTenantQuotaExceeded);
  EXPECT_EQ(master_->GetTenantQuota("a").value().quota_rejects, 1u);
  // A copy would take the tenant past its quota.
  EXPECT_EQ(Code(master_->ReplicaCopyStart("writer", key, "", {to}, /*move=*/false)),
            ErrorCode::kTenantQuotaExceeded);
  EXPECT_EQ(master_->GetTenantQuota("a").value().quota_rejects, 2u);
  // A move (a drain's too) adds nothing once it ends: charged meanwhile, refunded after.
  ASSERT_TRUE(master_->ReplicaCopyStart("writer", key, from, {to}, /*move=*/true).ok());
  EXPECT_EQ(Charged("a"), 9 * kKiB);
  ASSERT_TRUE(master_->ReplicaCopyEnd("writer", key, /*revoke=*/false).ok());
  master_->Tick();
  EXPECT_EQ(Charged("a"), 8 * kKiB);
}

TEST_F(MultiTenantMasterTest, KeysRemovalAndListingStayInTheTenant) {
  ASSERT_TRUE(Put("a", "same", kKiB).ok());
  ASSERT_TRUE(Put("b", "same", 2 * kKiB).ok());
  EXPECT_EQ(master_->GetSize(ScopedKey("a", "same")).value_or(0), kKiB);
  EXPECT_EQ(master_->GetSize(ScopedKey("b", "same")).value_or(0), 2 * kKiB);
  EXPECT_EQ(master_->RemoveByRegex("sa.*", false, "a").value_or(0), 1u);
  EXPECT_TRUE(master_->Exist(ScopedKey("b", "same")));
  EXPECT_THAT(master_->ListKeys(10, nullptr, "b"), ElementsAre("same"));
  EXPECT_TRUE(master_->ListKeys(10).empty());
  EXPECT_EQ(master_->RemoveAll(false, "a"), 0u);
  EXPECT_EQ(master_->RemoveAll(false, "b"), 1u);
  EXPECT_EQ(Charged("b"), 0u);
  // A bad tenant inside a scoped key is refused.
  EXPECT_EQ(Code(master_->PutStart("writer", ScopedKey("_x", "k"), kKiB, {})),
            ErrorCode::kInvalidParams);
}

TEST_F(MultiTenantMasterTest, UnmountRefundsAndPoliciesPersist) {
  ASSERT_TRUE(Put("a", "k", 2 * kKiB).ok());
  EXPECT_EQ(Charged("a"), 2 * kKiB);
  EXPECT_EQ(Code(master_->DeleteTenantQuota("a")), ErrorCode::kTenantNotEmpty);
  EXPECT_TRUE(Put("a", "k2", kKiB).ok());  // admission reopened
  ASSERT_TRUE(master_->UnmountSegment("store", "seg").ok());
  EXPECT_EQ(Charged("a"), 0u);
  // No memory mounted: every effective quota is 0.
  EXPECT_EQ(master_->GetTenantQuota("a")->effective_quota_bytes, 0u);
  auto upserted = master_->UpsertTenantQuota("c", 3 * kKiB);
  ASSERT_TRUE(upserted.ok()) << upserted.status();
  auto saved = LoadTenantPolicy(path_);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(*saved, (TenantPolicy{{"a", 8 * kKiB}, {"b", 64 * kKiB}, {"c", 3 * kKiB}}));
  EXPECT_TRUE(master_->DeleteTenantQuota("a").ok());
  EXPECT_EQ(LoadTenantPolicy(path_)->count("a"), 0u);
  EXPECT_EQ(Code(master_->DeleteTenantQuota("a")), ErrorCode::kObjectNotFound);
  EXPECT_EQ(Code(master_->UpsertTenantQuota("c", 0)), ErrorCode::kInvalidParams);
}

TEST(SingleTenantMasterTest, QuotaCallsAreUnavailableAndTenantsStillApart) {
  FakeClock clock;
  MasterService master(MasterOptions{}, clock);
  ASSERT_TRUE(master.MountSegment("store", Segment{"seg", kBase, 64 * kKiB}).ok());
  EXPECT_FALSE(master.MultiTenant());
  EXPECT_EQ(Code(master.ListTenantQuotas()), ErrorCode::kUnavailableInCurrentMode);
  EXPECT_EQ(Code(master.UpsertTenantQuota("a", 1)), ErrorCode::kUnavailableInCurrentMode);
  // Any tenant writes; keys stay apart.
  ASSERT_TRUE(master.PutStart("w", ScopedKey("x", "k"), kKiB, {}).ok());
  ASSERT_TRUE(master.PutEnd("w", ScopedKey("x", "k"), 0).ok());
  EXPECT_FALSE(master.Exist("k"));
  EXPECT_TRUE(master.Exist(ScopedKey("x", "k")));
}

}  // namespace
}  // namespace yuebing::master
