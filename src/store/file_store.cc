#include "store/file_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "yuebing/common/error_code.h"
#include "yuebing/common/limits.h"
#include "yuebing/common/logging.h"

namespace yuebing::store {
namespace {

constexpr char kMagic[8] = {'Y', 'B', 'S', 'S', 'D', '0', '0', '1'};
constexpr absl::string_view kObjSuffix = ".obj";
constexpr absl::string_view kTmpSuffix = ".tmp";

void PutU32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void PutU64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

uint64_t HeaderChecksum(const char* header40, absl::string_view key) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  XXH3_64bits_update(state, header40, 40);
  XXH3_64bits_update(state, key.data(), key.size());
  const uint64_t value = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return value;
}

absl::Status Errno(absl::string_view what, const std::string& path) {
  return MakeError(ErrorCode::kWriteFail,
                   absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

absl::Status WriteAll(int fd, const char* data, size_t size, uint64_t offset,
                      const std::string& path) {
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("write", path);
    }
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

// Reads exactly `size` bytes at `offset`; false on error or short file.
bool ReadAll(int fd, char* data, size_t size, uint64_t offset) {
  while (size > 0) {
    const ssize_t n = ::pread(fd, data, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

// Parses and verifies a whole object file open on `fd`. `expected_key` (when given) must match.
absl::StatusOr<std::pair<std::string, FileStore::Value>> ReadVerified(
    int fd, const std::string& path, const std::string* expected_key) {
  auto bad = [&](absl::string_view why) {
    return MakeError(ErrorCode::kObjectNotFound, absl::StrCat("bad object file ", path, ": ", why));
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) return bad("stat failed");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  char header[FileStore::kHeaderBytes];
  if (file_size < sizeof(header) || !ReadAll(fd, header, sizeof(header), 0)) {
    return bad("short header");
  }
  if (std::memcmp(header, kMagic, sizeof(kMagic)) != 0) return bad("bad magic");
  const uint32_t key_len = GetU32(header + 8);
  const uint64_t value_size = GetU64(header + 16);
  const uint64_t value_xxh = GetU64(header + 24);
  const uint64_t object_checksum = GetU64(header + 32);
  const uint64_t header_xxh = GetU64(header + 40);
  if (key_len == 0 || key_len > limits::kMaxScopedKeyBytes) return bad("bad key length");
  if (value_size == 0 || file_size != FileStore::FileBytes(key_len, value_size)) {
    return bad("size does not match the header (unfinished or truncated)");
  }
  std::string key(key_len, '\0');
  if (!ReadAll(fd, key.data(), key_len, sizeof(header))) return bad("short key");
  if (HeaderChecksum(header, key) != header_xxh) return bad("header checksum mismatch");
  if (expected_key != nullptr && key != *expected_key) return bad("holds another key");
  FileStore::Value value;
  value.object_checksum = object_checksum;
  value.bytes.resize(value_size);
  if (!ReadAll(fd, value.bytes.data(), value_size, sizeof(header) + key_len)) {
    return bad("short value");
  }
  if (XXH3_64bits(value.bytes.data(), value.bytes.size()) != value_xxh) {
    return bad("value checksum mismatch");
  }
  return std::make_pair(std::move(key), std::move(value));
}

}  // namespace

std::string FileStore::FileNameFor(absl::string_view key) {
  const XXH128_hash_t h = XXH3_128bits(key.data(), key.size());
  return absl::StrCat(absl::Hex(h.high64, absl::kZeroPad16), absl::Hex(h.low64, absl::kZeroPad16),
                      kObjSuffix);
}

std::string FileStore::PathFor(absl::string_view key) const {
  return absl::StrCat(dir_, "/", FileNameFor(key));
}

absl::StatusOr<std::unique_ptr<FileStore>> FileStore::Open(const std::string& dir,
                                                           uint64_t capacity) {
  if (dir.empty()) return MakeError(ErrorCode::kInvalidParams, "file store: empty directory");
  if (capacity == 0) return MakeError(ErrorCode::kInvalidParams, "file store: zero capacity");
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return Errno("mkdir", dir);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return MakeError(ErrorCode::kWriteFail, absl::StrCat("file store: ", dir, " is no directory"));
  }
  std::unique_ptr<FileStore> store(new FileStore(dir, capacity));
  if (absl::Status status = store->Recover(); !status.ok()) return status;
  return store;
}

FileStore::~FileStore() = default;

absl::Status FileStore::Recover() {
  DIR* d = ::opendir(dir_.c_str());
  if (d == nullptr) return Errno("opendir", dir_);
  struct Found {
    int64_t mtime_ns;
    std::string key;
    Item item;
  };
  std::vector<Found> found;
  uint64_t dropped = 0;
  while (struct dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const std::string path = absl::StrCat(dir_, "/", name);
    if (absl::EndsWith(name, kTmpSuffix)) {
      YB_LOG_INFO("file store: deleting unfinished write {}", path);
      ::unlink(path.c_str());
      ++dropped;
      continue;
    }
    if (!absl::EndsWith(name, kObjSuffix)) continue;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    ::fstat(fd, &st);
    auto parsed = ReadVerified(fd, path, nullptr);
    ::close(fd);
    if (!parsed.ok() || FileNameFor(parsed->first) != name) {
      YB_LOG_WARN("file store: deleting {}: {}", path,
                  parsed.ok() ? "name does not match its key" : parsed.status().ToString());
      ::unlink(path.c_str());
      ++dropped;
      continue;
    }
    const uint64_t size = parsed->second.bytes.size();
    found.push_back(Found{
        int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec, std::move(parsed->first),
        Item{size, parsed->second.object_checksum, FileBytes(parsed->first.size(), size), {}}});
  }
  ::closedir(d);
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.mtime_ns < b.mtime_ns; });
  yuebing::MutexLock lock(&mu_);
  for (Found& f : found) {
    f.item.file_bytes = FileBytes(f.key.size(), f.item.size);
    f.item.lru = lru_.insert(lru_.end(), f.key);
    used_bytes_ += f.item.file_bytes;
    items_.emplace(f.key, f.item);
  }
  while (used_bytes_ > capacity_ && !lru_.empty()) {
    DropLocked(lru_.front(), /*report=*/false);
    ++dropped;
  }
  removed_.clear();
  YB_LOG_INFO("file store {}: recovered {} objects ({} bytes), deleted {} files", dir_,
              items_.size(), used_bytes_, dropped);
  if (dropped > 0) SyncDir();
  return absl::OkStatus();
}

void FileStore::SyncDir() const {
  const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void FileStore::DropLocked(const std::string& key, bool report) {
  auto it = items_.find(key);
  if (it == items_.end()) return;
  const std::string k = key;  // `key` may alias the LRU node erased below
  ::unlink(PathFor(k).c_str());
  used_bytes_ -= it->second.file_bytes;
  lru_.erase(it->second.lru);
  items_.erase(it);
  if (report) removed_.push_back(k);
}

absl::Status FileStore::Write(absl::string_view key, absl::string_view value,
                              uint64_t object_checksum) {
  if (key.empty() || key.size() > limits::kMaxScopedKeyBytes) {
    return MakeError(ErrorCode::kInvalidParams, absl::StrCat("file store: key must be 1..",
                                                             limits::kMaxScopedKeyBytes, " bytes"));
  }
  if (value.empty()) return MakeError(ErrorCode::kInvalidParams, "file store: empty value");
  const uint64_t file_bytes = FileBytes(key.size(), value.size());
  if (file_bytes > capacity_) {
    return MakeError(ErrorCode::kInvalidParams,
                     absl::StrCat("file store: object of ", value.size(),
                                  " bytes does not fit the capacity of ", capacity_));
  }
  const std::string final_path = PathFor(key);
  std::string temp_path;
  {
    yuebing::MutexLock lock(&mu_);
    temp_path = absl::StrCat(final_path, ".", ++temp_serial_, kTmpSuffix);
  }
  char header[kHeaderBytes];
  std::memcpy(header, kMagic, sizeof(kMagic));
  PutU32(header + 8, static_cast<uint32_t>(key.size()));
  PutU32(header + 12, 0);
  PutU64(header + 16, value.size());
  PutU64(header + 24, XXH3_64bits(value.data(), value.size()));
  PutU64(header + 32, object_checksum);
  PutU64(header + 40, HeaderChecksum(header, key));
  const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("open", temp_path);
  absl::Status status = WriteAll(fd, header, sizeof(header), 0, temp_path);
  if (status.ok()) status = WriteAll(fd, key.data(), key.size(), sizeof(header), temp_path);
  if (status.ok()) {
    status = WriteAll(fd, value.data(), value.size(), sizeof(header) + key.size(), temp_path);
  }
  if (status.ok() && ::fsync(fd) != 0) status = Errno("fsync", temp_path);
  ::close(fd);
  if (!status.ok()) {
    ::unlink(temp_path.c_str());
    return status;
  }
  {
    yuebing::MutexLock lock(&mu_);
    const std::string k(key);
    DropLocked(k, /*report=*/false);  // the old file of the key is replaced
    while (used_bytes_ + file_bytes > capacity_ && !lru_.empty()) {
      DropLocked(lru_.front(), /*report=*/true);
    }
    if (::rename(temp_path.c_str(), final_path.c_str()) != 0) {
      status = Errno("rename", temp_path);
      ::unlink(temp_path.c_str());
      return status;
    }
    Item item{value.size(), object_checksum, file_bytes, lru_.insert(lru_.end(), k)};
    items_.emplace(k, item);
    used_bytes_ += file_bytes;
  }
  SyncDir();
  return absl::OkStatus();
}

absl::StatusOr<FileStore::Value> FileStore::Read(absl::string_view key) {
  const std::string k(key);
  const std::string path = PathFor(key);
  int fd = -1;
  {
    yuebing::MutexLock lock(&mu_);
    auto it = items_.find(k);
    if (it == items_.end()) return MakeError(ErrorCode::kObjectNotFound, "not in the file store");
    lru_.splice(lru_.end(), lru_, it->second.lru);
    // Opened under the lock: a concurrent removal cannot take the file away from this read.
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      YB_LOG_WARN("file store: {} vanished: {}", path, std::strerror(errno));
      DropLocked(k, /*report=*/true);
      return MakeError(ErrorCode::kObjectNotFound, "object file vanished");
    }
  }
  auto parsed = ReadVerified(fd, path, &k);
  ::close(fd);
  if (!parsed.ok()) {
    YB_LOG_WARN("file store: {}", parsed.status().ToString());
    yuebing::MutexLock lock(&mu_);
    DropLocked(k, /*report=*/true);
    return parsed.status();
  }
  return std::move(parsed->second);
}

bool FileStore::Remove(absl::string_view key) {
  yuebing::MutexLock lock(&mu_);
  const std::string k(key);
  if (!items_.contains(k)) return false;
  DropLocked(k, /*report=*/false);
  return true;
}

bool FileStore::Contains(absl::string_view key) const {
  yuebing::MutexLock lock(&mu_);
  return items_.contains(std::string(key));
}

std::vector<FileStore::Entry> FileStore::List() const {
  yuebing::MutexLock lock(&mu_);
  std::vector<Entry> out;
  out.reserve(items_.size());
  for (const std::string& key : lru_) {
    const Item& item = items_.at(key);
    out.push_back(Entry{key, item.size, item.object_checksum});
  }
  return out;
}

std::vector<std::string> FileStore::TakeRemovedKeys() {
  yuebing::MutexLock lock(&mu_);
  std::vector<std::string> out;
  out.swap(removed_);
  return out;
}

uint64_t FileStore::used_bytes() const {
  yuebing::MutexLock lock(&mu_);
  return used_bytes_;
}

}  // namespace yuebing::store
