#include "master/object_index.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <string>

#include "absl/hash/hash.h"

namespace yuebing::master {

ObjectTable::ObjectTable() : index_(0, Hash{this}, Eq{this}) {}

size_t ObjectTable::Hash::operator()(uint32_t index) const {
  return absl::Hash<absl::string_view>{}(table->key(index));
}

size_t ObjectTable::Hash::operator()(absl::string_view key) const {
  return absl::Hash<absl::string_view>{}(key);
}

uint32_t ObjectTable::Find(absl::string_view key) const {
  auto it = index_.find(key);
  return it == index_.end() ? kNone : *it;
}

uint32_t ObjectTable::StoreKey(absl::string_view key) {
  assert(!key.empty() && key.size() <= kMaxKeyBytes);
  uint32_t chunk = arena_tail_ / kArenaChunkBytes;
  uint32_t pos = arena_tail_ % kArenaChunkBytes;
  if (chunk < arena_.size() && pos + key.size() > kArenaChunkBytes) {
    garbage_key_bytes_ += kArenaChunkBytes - pos;  // the unused tail of a full chunk
    ++chunk;
    pos = 0;
  }
  if (chunk >= arena_.size()) {
    if (chunk >= kMaxArenaChunks) return kNone;
    arena_.push_back(std::make_unique_for_overwrite<char[]>(kArenaChunkBytes));
  }
  std::memcpy(arena_[chunk].get() + pos, key.data(), key.size());
  const uint32_t ref = chunk * kArenaChunkBytes + pos;
  arena_tail_ = ref + static_cast<uint32_t>(key.size());
  live_key_bytes_ += key.size();
  return ref;
}

uint32_t ObjectTable::Insert(absl::string_view key) {
  if (key.empty() || key.size() > kMaxKeyBytes) return kNone;
  uint32_t index = free_head_;
  if (index == kNone) {
    if (next_unused_ >= kMaxEntries) return kNone;
    if (next_unused_ / kEntriesPerChunk >= entries_.size()) {
      entries_.push_back(std::make_unique<ObjectEntry[]>(kEntriesPerChunk));
    }
    index = next_unused_;
  }
  const uint32_t ref = StoreKey(key);
  if (ref == kNone) return kNone;
  ObjectEntry& entry = Slot(index);
  if (index == free_head_) {
    free_head_ = entry.key_ref;
  } else {
    ++next_unused_;
  }
  entry = ObjectEntry{};
  entry.key_ref = ref;
  entry.key_len = static_cast<uint16_t>(key.size());
  entry.flags = kEntryUsed;
  index_.insert(index);
  return index;
}

void ObjectTable::Erase(uint32_t index) {
  ObjectEntry& entry = Slot(index);
  assert(entry.flags & kEntryUsed);
  index_.erase(index);
  live_key_bytes_ -= entry.key_len;
  garbage_key_bytes_ += entry.key_len;
  entry = ObjectEntry{};
  entry.key_ref = free_head_;
  free_head_ = index;
  CompactKeysIfWasteful();
}

// Compaction costs a scan of every entry ever used plus a copy of the live keys, so it waits
// until the garbage outweighs both: more than the live key bytes and at least kMinCompactBytes or
// 16 bytes per entry (a quarter of the entries' own memory), whichever is larger. Key garbage is
// thus bounded by the table's other memory, not by a fixed per-table floor: that floor (it was
// four 64 KiB chunks) made an almost empty table under churn of fresh keys hold up to 320 KiB of
// arena, 20 MiB of RSS over the master's 64 shards, reached only after millions of short keys.
void ObjectTable::CompactKeysIfWasteful() {
  constexpr uint64_t kMinCompactBytes = 16 * 1024;
  constexpr uint64_t kCompactBytesPerEntry = sizeof(ObjectEntry) / 4;
  if (garbage_key_bytes_ <= live_key_bytes_ ||
      garbage_key_bytes_ < std::max(kMinCompactBytes, next_unused_ * kCompactBytesPerEntry)) {
    return;
  }
  // The live keys are gathered aside and packed again from the start of the same chunks: the
  // arena keeps its first chunk for good and frees only those past the packed keys, so steady
  // churn allocates and frees no chunks (which the heap would fragment around).
  std::string live;
  live.reserve(live_key_bytes_);
  for (uint32_t i = 0; i < next_unused_; ++i) {
    if (!(Slot(i).flags & kEntryUsed)) continue;
    const absl::string_view k = key(i);
    live.append(k.data(), k.size());
  }
  arena_tail_ = 0;
  live_key_bytes_ = 0;
  garbage_key_bytes_ = 0;
  size_t pos = 0;
  for (uint32_t i = 0; i < next_unused_; ++i) {
    ObjectEntry& entry = Slot(i);
    if (!(entry.flags & kEntryUsed)) continue;
    // Never fails: packed keys that the garbage outweighs fit in the chunks there are (any two
    // consecutive chunks of a packing hold more than one chunk of keys).
    entry.key_ref = StoreKey(absl::string_view(live.data() + pos, entry.key_len));
    pos += entry.key_len;
  }
  const size_t chunks_used = (size_t{arena_tail_} + kArenaChunkBytes - 1) / kArenaChunkBytes;
  arena_.resize(std::max<size_t>(1, chunks_used));
}

size_t ObjectTable::MemoryBytes() const {
  return entries_.size() * kEntriesPerChunk * sizeof(ObjectEntry) +
         arena_.size() * size_t{kArenaChunkBytes} + index_.capacity() * (sizeof(uint32_t) + 1);
}

}  // namespace yuebing::master
