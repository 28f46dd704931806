#include "transport/memory_registry.h"

#include "absl/strings/str_cat.h"

namespace yuebing::transport {

absl::Status MemoryRegistry::Add(const RegisteredBuffer& buffer) {
  if (buffer.addr == 0) return absl::InvalidArgumentError("cannot register a null address");
  if (buffer.length == 0) return absl::InvalidArgumentError("cannot register zero bytes");
  if (buffer.addr + buffer.length < buffer.addr) {
    return absl::InvalidArgumentError("buffer wraps around the address space");
  }
  yuebing::MutexLock lock(&mu_);
  auto next = buffers_.lower_bound(buffer.addr);
  if (next != buffers_.end() && next->first < buffer.addr + buffer.length) {
    return absl::AlreadyExistsError(absl::StrCat("buffer 0x", absl::Hex(buffer.addr), "+",
                                                 buffer.length, " overlaps a registered one at 0x",
                                                 absl::Hex(next->first)));
  }
  if (next != buffers_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.buffer.length > buffer.addr) {
      return absl::AlreadyExistsError(
          absl::StrCat("buffer 0x", absl::Hex(buffer.addr), "+", buffer.length,
                       " overlaps a registered one at 0x", absl::Hex(prev->first)));
    }
  }
  buffers_.emplace(buffer.addr, Entry{buffer, 0, false});
  return absl::OkStatus();
}

absl::StatusOr<RegisteredBuffer> MemoryRegistry::Remove(uint64_t addr) {
  yuebing::MutexLock lock(&mu_);
  auto it = buffers_.find(addr);
  if (it == buffers_.end() || it->second.removing) {
    return absl::NotFoundError(absl::StrCat("no buffer registered at 0x", absl::Hex(addr)));
  }
  it->second.removing = true;
  Entry* entry = &it->second;
  mu_.Await(yuebing::Condition(
      +[](Entry* e) { return e->pins == 0; }, entry));
  RegisteredBuffer buffer = entry->buffer;
  buffers_.erase(addr);
  return buffer;
}

absl::StatusOr<MemoryRegistry::Pin> MemoryRegistry::Acquire(uint64_t addr, uint64_t length) {
  yuebing::MutexLock lock(&mu_);
  auto it = buffers_.upper_bound(addr);
  if (it != buffers_.begin() && length > 0) {
    --it;
    Entry& entry = it->second;
    uint64_t offset = addr - entry.buffer.addr;
    if (!entry.removing && offset < entry.buffer.length && length <= entry.buffer.length - offset) {
      ++entry.pins;
      return Pin(this, it->first, entry.buffer.length);
    }
  }
  return absl::PermissionDeniedError(
      absl::StrCat("range 0x", absl::Hex(addr), "+", length, " is not inside a registered buffer"));
}

void MemoryRegistry::Release(uint64_t key) {
  yuebing::MutexLock lock(&mu_);
  auto it = buffers_.find(key);
  if (it != buffers_.end()) --it->second.pins;
}

std::vector<RegisteredBuffer> MemoryRegistry::Snapshot() const {
  yuebing::MutexLock lock(&mu_);
  std::vector<RegisteredBuffer> out;
  out.reserve(buffers_.size());
  for (const auto& [addr, entry] : buffers_) {
    if (!entry.removing) out.push_back(entry.buffer);
  }
  return out;
}

MemoryRegistry::Pin::~Pin() {
  if (registry_ != nullptr) registry_->Release(key_);
}

}  // namespace yuebing::transport
