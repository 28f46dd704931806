// Store client against a real cluster: yuebing-master and yuebing-store processes on 127.0.0.1.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "support/test_cluster.h"
#include "yuebing/common/error_code.h"

namespace yuebing::store {
namespace {

using test_support::TestCluster;
using test_support::ValueFor;

ErrorCode Code(const absl::Status& status) { return ToErrorCode(status); }

class StoreClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = std::make_unique<TestCluster>(TestCluster::Options{.stores = 3});
    ASSERT_TRUE(cluster_->Start());
    client_ = cluster_->MakeClient();
    ASSERT_NE(client_, nullptr);
  }
  std::unique_ptr<TestCluster> cluster_;
  std::unique_ptr<Client> client_;
};

TEST_F(StoreClusterTest, PutGetRoundTripAcrossSizes) {
  for (size_t size :
       {size_t{1}, size_t{4096}, size_t{65536} + 3, size_t{1} << 20, size_t{4} << 20}) {
    std::string key = "obj-" + std::to_string(size);
    std::string value = ValueFor(key, size);
    ASSERT_TRUE(client_->Put(key, value).ok());
    auto got = client_->Get(key);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, value) << "size " << size;
    std::string buffer(size + 10, 'x');
    auto read = client_->GetInto(key, buffer.data(), buffer.size());
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(*read, size);
    EXPECT_EQ(buffer.substr(0, size), value);
    EXPECT_EQ(*client_->GetSize(key), size);
    EXPECT_TRUE(*client_->IsExist(key));
  }
}

TEST_F(StoreClusterTest, MissesAndErrorsHaveMooncakeCodes) {
  EXPECT_EQ(Code(client_->Get("absent").status()), ErrorCode::kObjectNotFound);
  EXPECT_FALSE(*client_->IsExist("absent"));
  EXPECT_EQ(Code(client_->Put("", "x")), ErrorCode::kInvalidParams);
  EXPECT_EQ(Code(client_->Put("k", "")), ErrorCode::kInvalidParams);
  ASSERT_TRUE(client_->Put("small", "0123456789").ok());
  char tiny[4];
  EXPECT_EQ(Code(client_->GetInto("small", tiny, sizeof(tiny)).status()),
            ErrorCode::kInvalidParams);
  EXPECT_EQ(Code(client_->Remove("absent")), ErrorCode::kObjectNotFound);
}

TEST_F(StoreClusterTest, PutOfExistingKeyKeepsFirstValueAndUpsertReplaces) {
  ASSERT_TRUE(client_->Put("k", "first").ok());
  EXPECT_TRUE(client_->Put("k", "second!").ok());
  EXPECT_EQ(*client_->Get("k"), "first");
  ASSERT_TRUE(client_->Upsert("k", "third value").ok());
  EXPECT_EQ(*client_->Get("k"), "third value");
}

TEST_F(StoreClusterTest, RemoveFamily) {
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(client_->Put("layer-" + std::to_string(i), ValueFor("v", 100)).ok());
  }
  ASSERT_TRUE(client_->Put("other", "x").ok());
  // A finished Get has released its read lease (the release rides along with the Remove):
  // plain Remove works at once, well within the lease TTL.
  ASSERT_TRUE(client_->Get("layer-0").ok());
  EXPECT_TRUE(client_->Remove("layer-0").ok());
  EXPECT_EQ(Code(client_->Remove("layer-0", /*force=*/true)), ErrorCode::kObjectNotFound);
  auto removed = client_->RemoveByRegex("layer-[1-4]", true);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(*removed, 4u);
  EXPECT_TRUE(*client_->IsExist("layer-5"));
  EXPECT_EQ(*client_->RemoveAll(true), 6u);
  EXPECT_FALSE(*client_->IsExist("other"));
}

TEST_F(StoreClusterTest, BatchOperations) {
  std::vector<std::string> keys, values;
  for (int i = 0; i < 256; ++i) {
    keys.push_back("batch-" + std::to_string(i));
    values.push_back(ValueFor(keys.back(), 4096 + i));
  }
  std::vector<absl::string_view> views(values.begin(), values.end());
  for (const absl::Status& s : client_->BatchPut(keys, views)) ASSERT_TRUE(s.ok()) << s;
  auto got = client_->BatchGet(keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].status();
    EXPECT_EQ(*got[i], values[i]);
  }
  std::vector<std::string> buffers(keys.size(), std::string(8192, '\0'));
  std::vector<Client::Buffer> dests;
  for (auto& b : buffers) dests.push_back({b.data(), b.size()});
  auto read = client_->BatchGetInto(keys, dests);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(read[i].ok());
    EXPECT_EQ(buffers[i].substr(0, *read[i]), values[i]);
  }
  keys.push_back("missing");
  auto exist = client_->BatchIsExist(keys);
  EXPECT_TRUE(*exist[0]);
  EXPECT_FALSE(*exist.back());
  EXPECT_EQ(client_->BatchPut({"a", "b"}, {"x"})[0].ok(), false);
  EXPECT_TRUE(client_->BatchGet({}).empty());
}

TEST_F(StoreClusterTest, PartsAreConcatenated) {
  std::vector<absl::string_view> parts = {"hello ", "", "world", "!"};
  ASSERT_TRUE(client_->PutParts("parts", parts).ok());
  EXPECT_EQ(*client_->Get("parts"), "hello world!");
  char a[5], b[7];
  auto read = client_->BatchGetIntoParts({"parts"}, {{{a, sizeof(a)}, {b, sizeof(b)}}});
  ASSERT_TRUE(read[0].ok()) << read[0].status();
  EXPECT_EQ(std::string(a, 5) + std::string(b, 7), "hello world!");
}

// Byte ranges of objects land where asked; a range past its object fails alone (not read),
// a missing key fails its own ranges only, zero-length ranges read nothing.
TEST_F(StoreClusterTest, RangesOfObjectsAreReadIntoTheirDestinations) {
  const std::string first = ValueFor("range-a", 300000);
  const std::string second = ValueFor("range-b", 5000);
  ASSERT_TRUE(client_->Put("range-a", first).ok());
  ASSERT_TRUE(client_->Put("range-b", second).ok());
  std::string out(16, '.');
  std::string whole(second.size(), '\0');
  using Range = Client::Range;
  auto read = client_->BatchGetRanges(
      {"range-a", "missing", "range-b", "range-b"},
      {{Range{&out[0], 299996, 4}, Range{&out[4], 7, 3}, Range{&out[8], 299998, 4},
        Range{&out[12], 0, 0}, Range{&out[13], 300001, 0}},
       {Range{&out[14], 0, 2}},
       {Range{&whole[0], 0, 2500}, Range{&whole[2500], 2500, 2500}},
       {Range{nullptr, 0, 1}}});
  ASSERT_EQ(read.size(), 4u);
  ASSERT_TRUE(read[0].ok()) << read[0].status();
  ASSERT_EQ(read[0]->size(), 5u);
  EXPECT_TRUE((*read[0])[0].ok());
  EXPECT_TRUE((*read[0])[1].ok());
  EXPECT_EQ(ToErrorCode((*read[0])[2]), ErrorCode::kInvalidParams);  // past the end
  EXPECT_TRUE((*read[0])[3].ok());
  EXPECT_EQ(ToErrorCode((*read[0])[4]), ErrorCode::kInvalidParams);  // empty, but past the end
  EXPECT_EQ(out.substr(0, 4), first.substr(299996, 4));
  EXPECT_EQ(out.substr(4, 3), first.substr(7, 3));
  EXPECT_EQ(out.substr(7), std::string(9, '.')) << "bytes written that were not asked for";
  EXPECT_EQ(ToErrorCode(read[1].status()), ErrorCode::kObjectNotFound);
  ASSERT_TRUE(read[2].ok()) << read[2].status();
  EXPECT_EQ(whole, second);
  ASSERT_TRUE(read[3].ok());
  EXPECT_EQ(ToErrorCode((*read[3])[0]), ErrorCode::kInvalidParams);  // no destination
  EXPECT_EQ(ToErrorCode(client_->BatchGetRanges({"range-a"}, {}).front().status()),
            ErrorCode::kInvalidParams);
}

TEST_F(StoreClusterTest, ClientWithItsOwnSegmentServesOthers) {
  auto contributor = cluster_->MakeClient(32 << 20);
  ASSERT_NE(contributor, nullptr);
  master::ReplicateConfig config;
  config.preferred_segment = contributor->SegmentName();
  std::string value = ValueFor("mine", 1 << 20);
  ASSERT_TRUE(contributor->Put("mine", value, config).ok());
  EXPECT_EQ(*client_->Get("mine"), value);
  EXPECT_EQ(*contributor->Get("mine"), value);
  EXPECT_GT(contributor->Engine().Stats().local_bytes, 0u) << "local replica not read locally";
}

TEST_F(StoreClusterTest, ReplicasSurviveAKilledStore) {
  master::ReplicateConfig config;
  config.replica_num = 3;
  std::vector<std::string> keys;
  for (int i = 0; i < 20; ++i) {
    keys.push_back("replicated-" + std::to_string(i));
    ASSERT_TRUE(client_->Put(keys.back(), ValueFor(keys.back(), 64 << 10), config).ok());
  }
  cluster_->KillStore(0);
  for (const std::string& key : keys) {
    auto got = client_->Get(key);
    ASSERT_TRUE(got.ok()) << key << ": " << got.status();
    EXPECT_EQ(*got, ValueFor(key, 64 << 10));
  }
  EXPECT_GT(client_->Stats().replica_failovers, 0u);
}

TEST_F(StoreClusterTest, KilledStoreUnderLoadNeverServesWrongBytes) {
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0}, hits{0}, misses{0}, errors{0};
  std::atomic<int> written{0};
  std::thread writer([&] {
    for (int i = 0; !stop && i < 100000; ++i) {
      std::string key = "load-" + std::to_string(i);
      if (client_->Put(key, ValueFor(key, 32 << 10)).ok()) written = i + 1;
    }
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&, t] {
      for (int round = 0; !stop; ++round) {
        int n = written.load();
        if (n == 0) continue;
        std::string key = "load-" + std::to_string((round * 7 + t) % n);
        auto got = client_->Get(key);
        if (got.ok()) {
          (*got == ValueFor(key, 32 << 10) ? hits : wrong)++;
        } else if (ToErrorCode(got.status()) == ErrorCode::kObjectNotFound) {
          misses++;
        } else {
          errors++;
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  cluster_->KillStore(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  stop = true;
  writer.join();
  for (auto& r : readers) r.join();
  EXPECT_EQ(wrong.load(), 0) << "wrong bytes served";
  EXPECT_GT(hits.load(), 0);
  std::printf("hits=%d misses=%d errors=%d written=%d\n", hits.load(), misses.load(), errors.load(),
              written.load());
}

}  // namespace
}  // namespace yuebing::store
