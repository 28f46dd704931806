// FileStore against a real directory: format, bound, recovery and bad input.
#include "store/file_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "yuebing/common/error_code.h"

namespace yuebing::store {
namespace {

namespace fs = std::filesystem;

class FileStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/yb_file_store_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<FileStore> Open(uint64_t capacity) {
    auto store = FileStore::Open(dir_, capacity);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(store).value() : nullptr;
  }
  std::string PathOf(const std::string& key) { return dir_ + "/" + FileStore::FileNameFor(key); }

  std::string dir_;
};

std::string Bytes(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i * 7);
  return s;
}

TEST_F(FileStoreTest, WriteReadRoundTripAndFormat) {
  auto store = Open(1 << 20);
  const std::string key("k\0ey", 4);  // keys are bytes
  const std::string value = Bytes(5000, 3);
  ASSERT_TRUE(store->Write(key, value, 1234).ok());
  auto read = store->Read(key);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->bytes, value);
  EXPECT_EQ(read->object_checksum, 1234u);
  EXPECT_EQ(fs::file_size(PathOf(key)), FileStore::kHeaderBytes + key.size() + value.size());
  EXPECT_EQ(store->used_bytes(), FileStore::FileBytes(key.size(), value.size()));
  std::ifstream in(PathOf(key), std::ios::binary);
  char magic[8];
  in.read(magic, 8);
  EXPECT_EQ(std::string(magic, 8), "YBSSD001");
  // Replacing a key keeps one file and its accounting.
  ASSERT_TRUE(store->Write(key, "short", 9).ok());
  EXPECT_EQ(store->Read(key)->bytes, "short");
  EXPECT_EQ(store->used_bytes(), FileStore::FileBytes(key.size(), 5));
  EXPECT_EQ(store->List().size(), 1u);
}

TEST_F(FileStoreTest, BadInputIsRefused) {
  EXPECT_EQ(ToErrorCode(FileStore::Open("", 100).status()), ErrorCode::kInvalidParams);
  EXPECT_EQ(ToErrorCode(FileStore::Open(dir_, 0).status()), ErrorCode::kInvalidParams);
  std::ofstream(dir_ + "/plain") << "x";
  EXPECT_FALSE(FileStore::Open(dir_ + "/plain", 100).ok());
  auto store = Open(1000);
  EXPECT_EQ(ToErrorCode(store->Write("", "v", 0)), ErrorCode::kInvalidParams);
  EXPECT_EQ(ToErrorCode(store->Write(std::string(4097, 'k'), "v", 0)), ErrorCode::kInvalidParams);
  EXPECT_EQ(ToErrorCode(store->Write("k", "", 0)), ErrorCode::kInvalidParams);
  EXPECT_EQ(ToErrorCode(store->Write("k", Bytes(1000, 1), 0)), ErrorCode::kInvalidParams);
  EXPECT_EQ(ToErrorCode(store->Read("absent").status()), ErrorCode::kObjectNotFound);
  EXPECT_FALSE(store->Remove("absent"));
}

TEST_F(FileStoreTest, CapacityBoundEvictsLeastRecentlyUsed) {
  const uint64_t per_file = FileStore::FileBytes(2, 1000);
  auto store = Open(per_file * 3 + 10);
  for (const char* key : {"k0", "k1", "k2"}) ASSERT_TRUE(store->Write(key, Bytes(1000, 1), 7).ok());
  EXPECT_TRUE(store->TakeRemovedKeys().empty());
  ASSERT_TRUE(store->Read("k0").ok());  // k1 is now the least recently used
  ASSERT_TRUE(store->Write("k3", Bytes(1000, 2), 7).ok());
  EXPECT_EQ(store->TakeRemovedKeys(), std::vector<std::string>{"k1"});
  EXPECT_FALSE(store->Contains("k1"));
  EXPECT_FALSE(fs::exists(PathOf("k1")));
  EXPECT_TRUE(store->Contains("k0"));
  EXPECT_LE(store->used_bytes(), store->capacity());
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(store->Write("x" + std::to_string(i), Bytes(500 + i * 10, 3), 1).ok());
    EXPECT_LE(store->used_bytes(), store->capacity());
  }
  uint64_t on_disk = 0;
  for (const auto& e : fs::directory_iterator(dir_)) on_disk += fs::file_size(e.path());
  EXPECT_EQ(on_disk, store->used_bytes());
  EXPECT_LE(on_disk, store->capacity());
}

TEST_F(FileStoreTest, RecoveryKeepsCompleteFilesAndDropsBrokenOnes) {
  {
    auto store = Open(1 << 20);
    for (const char* key : {"good1", "good2", "trunc", "flip", "misnamed"}) {
      ASSERT_TRUE(store->Write(key, Bytes(3000, key[0]), 42).ok());
    }
  }
  // An unfinished write, a truncated file, a flipped value byte, a file under another key's name.
  std::ofstream(PathOf("tmpkey") + ".1.tmp") << "partial";
  fs::resize_file(PathOf("trunc"), fs::file_size(PathOf("trunc")) - 100);
  {
    std::fstream f(PathOf("flip"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(FileStore::kHeaderBytes + 4 + 1000);
    f.put('\x5a' ^ Bytes(3000, 'f')[1000]);
  }
  fs::rename(PathOf("misnamed"), PathOf("other"));
  std::ofstream(dir_ + "/README") << "not ours";  // unknown files are left alone

  auto store = Open(1 << 20);
  std::vector<std::string> keys;
  for (const auto& e : store->List()) keys.push_back(e.key);
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<std::string>{"good1", "good2"}));
  EXPECT_EQ(store->Read("good1")->bytes, Bytes(3000, 'g'));
  EXPECT_EQ(store->Read("good2")->object_checksum, 42u);
  for (const char* key : {"trunc", "flip", "misnamed", "other", "tmpkey"}) {
    EXPECT_FALSE(store->Read(key).ok()) << key;
    EXPECT_FALSE(fs::exists(PathOf(key))) << key;
  }
  EXPECT_FALSE(fs::exists(PathOf("tmpkey") + ".1.tmp"));
  EXPECT_TRUE(fs::exists(dir_ + "/README"));
  EXPECT_EQ(store->used_bytes(), 2 * FileStore::FileBytes(5, 3000));
}

TEST_F(FileStoreTest, CorruptionAfterOpenIsDetectedOnRead) {
  auto store = Open(1 << 20);
  ASSERT_TRUE(store->Write("key", Bytes(100, 1), 5).ok());
  {
    std::fstream f(PathOf("key"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(FileStore::kHeaderBytes + 3 + 50);
    f.put('\x01' ^ Bytes(100, 1)[50]);
  }
  EXPECT_EQ(ToErrorCode(store->Read("key").status()), ErrorCode::kObjectNotFound);
  EXPECT_EQ(store->TakeRemovedKeys(), std::vector<std::string>{"key"});
  EXPECT_EQ(store->used_bytes(), 0u);
}

TEST_F(FileStoreTest, RecoveryHonoursASmallerCapacity) {
  {
    auto store = Open(1 << 20);
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(store->Write("k" + std::to_string(i), Bytes(1000, 1), 1).ok());
    }
  }
  auto store = Open(FileStore::FileBytes(2, 1000) * 4);
  EXPECT_EQ(store->List().size(), 4u);
  EXPECT_LE(store->used_bytes(), store->capacity());
  uint64_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 4u);
}

}  // namespace
}  // namespace yuebing::store
