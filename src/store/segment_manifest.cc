#include "store/segment_manifest.h"

#include <utility>

#include "absl/strings/string_view.h"
#include "yuebing/common/checksum.h"

namespace yuebing::store {

void SegmentManifest::Apply(const master::JournalBatch& batch) {
  yuebing::MutexLock lock(&mu_);
  if (batch.reset) {
    // Changes were lost. Objects with a checksum stay: Verified() reports them only if their
    // bytes still match (at worst a removed object comes back with its own value). Those
    // without one could name reused bytes: they go.
    for (auto it = by_address_.begin(); it != by_address_.end();) {
      if (it->second.object.checksum == kNoChecksum) {
        by_address_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  for (const master::JournalEntry& entry : batch.entries) {
    if (entry.op == master::JournalEntry::Op::kDrop) {
      by_address_.erase(entry.address);
      continue;
    }
    by_address_[entry.address] = Record{
        master::RestoredObject{entry.key, entry.address, entry.size, entry.checksum, entry.pins},
        entry.committed};
  }
}

std::vector<master::RestoredObject> SegmentManifest::Verified(uint64_t base, uint64_t size) {
  std::vector<master::RestoredObject> objects;
  yuebing::MutexLock lock(&mu_);
  objects.reserve(by_address_.size());
  for (auto it = by_address_.begin(); it != by_address_.end();) {
    const master::RestoredObject& object = it->second.object;
    const bool inside = object.address >= base && object.size <= size &&
                        object.address - base <= size - object.size;
    const bool known = it->second.committed || object.checksum != kNoChecksum;
    const bool intact =
        inside && known &&
        ChecksumMatches(
            object.checksum,
            {absl::string_view(reinterpret_cast<const char*>(object.address), object.size)});
    if (!intact) {
      by_address_.erase(it++);
      continue;
    }
    objects.push_back(object);
    ++it;
  }
  return objects;
}

void SegmentManifest::Erase(uint64_t address) {
  yuebing::MutexLock lock(&mu_);
  by_address_.erase(address);
}

void SegmentManifest::Clear() {
  yuebing::MutexLock lock(&mu_);
  by_address_.clear();
}

size_t SegmentManifest::size() const {
  yuebing::MutexLock lock(&mu_);
  return by_address_.size();
}

}  // namespace yuebing::store
