// FileStore: a bounded directory of checksummed object files, the disk tier of a store server.
//
// One file per key, named by a 128-bit hash of the key ("<32 hex>.obj"). A file is
//   header (48 bytes, little endian): magic "YBSSD001", key length u32, reserved u32,
//     value size u64, xxh3-64 of the value u64, object checksum u64 (opaque: what the master
//     recorded at PutEnd, reported back on restart), xxh3-64 of the preceding 40 bytes and the key
//   key bytes, value bytes.
// Writes go to "<name>.<n>.tmp", are fsynced, renamed over "<name>.obj" and the directory is
// fsynced: a file under its final name is complete. Every read verifies magic, header checksum,
// key, size and value checksum; a file that fails is deleted and reads as absent.
//
// Bound: the bytes of all files (headers included) stay <= capacity. A write that does not fit
// removes least-recently-used files (reads and writes count as use) first.
//
// Open() recovers a directory: temp files are deleted, every "*.obj" file is verified in full
// (bad or misnamed ones are deleted), LRU order starts from file modification times, and files
// past the capacity (oldest first) are removed.
//
// Plain pread/pwrite on buffered files: objects are whole-file reads and writes of KiB..MiB,
// where the page cache already gives sequential throughput; O_DIRECT would add alignment copies
// and was not measured to help (see docs/store.md).
//
// Thread safety: all methods are thread-safe; file I/O runs outside the index lock.
// Errors: kInvalidParams (bad key, empty value, value larger than the capacity), kObjectNotFound
// (absent, or present but failed verification), kWriteFail (I/O errors).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "yuebing/common/mutex.h"

namespace yuebing::store {

class FileStore {
 public:
  static constexpr size_t kHeaderBytes = 48;

  struct Entry {
    std::string key;
    uint64_t size = 0;             // value bytes
    uint64_t object_checksum = 0;  // as given to Write
  };
  struct Value {
    std::string bytes;
    uint64_t object_checksum = 0;
  };

  // Creates `dir` if needed and recovers it (see above). Errors: kInvalidParams (empty dir, zero
  // capacity), kWriteFail (directory not usable).
  static absl::StatusOr<std::unique_ptr<FileStore>> Open(const std::string& dir, uint64_t capacity);
  ~FileStore();
  FileStore(const FileStore&) = delete;
  FileStore& operator=(const FileStore&) = delete;

  // Stores `value` under `key` (replacing any previous file of the key). Files removed to make
  // room are reported through TakeRemovedKeys().
  absl::Status Write(absl::string_view key, absl::string_view value, uint64_t object_checksum);
  // The verified value of `key`. A file failing verification is removed (and reported).
  absl::StatusOr<Value> Read(absl::string_view key);
  // Deletes the file of `key`; false when there was none. Not reported by TakeRemovedKeys().
  bool Remove(absl::string_view key);
  bool Contains(absl::string_view key) const;
  // Every stored object (LRU order, oldest first).
  std::vector<Entry> List() const;
  // Keys whose files went since the last call (LRU removal, failed verification).
  std::vector<std::string> TakeRemovedKeys();

  uint64_t used_bytes() const;
  uint64_t capacity() const { return capacity_; }
  const std::string& dir() const { return dir_; }

  // The file name of a key, and the file size of an object (for tests and accounting).
  static std::string FileNameFor(absl::string_view key);
  static uint64_t FileBytes(uint64_t key_bytes, uint64_t value_bytes) {
    return kHeaderBytes + key_bytes + value_bytes;
  }

 private:
  struct Item {
    uint64_t size;
    uint64_t object_checksum;
    uint64_t file_bytes;
    std::list<std::string>::iterator lru;  // position in lru_
  };
  FileStore(std::string dir, uint64_t capacity) : dir_(std::move(dir)), capacity_(capacity) {}
  absl::Status Recover();
  std::string PathFor(absl::string_view key) const;
  // Drops the index entry and the file of `key`; `report` adds it to the removed keys.
  void DropLocked(const std::string& key, bool report) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SyncDir() const;

  const std::string dir_;
  const uint64_t capacity_;
  mutable yuebing::Mutex mu_;
  absl::flat_hash_map<std::string, Item> items_ ABSL_GUARDED_BY(mu_);
  std::list<std::string> lru_ ABSL_GUARDED_BY(mu_);  // front: least recently used
  uint64_t used_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t temp_serial_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> removed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace yuebing::store
