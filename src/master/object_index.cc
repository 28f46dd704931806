#include "master/object_index.h"

#include <cassert>
#include <cstring>

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

void ObjectTable::CompactKeysIfWasteful() {
  if (garbage_key_bytes_ <= live_key_bytes_ || garbage_key_bytes_ < 4 * kArenaChunkBytes) return;
  std::vector<std::unique_ptr<char[]>> old_arena;
  old_arena.swap(arena_);
  arena_tail_ = 0;
  live_key_bytes_ = 0;
  garbage_key_bytes_ = 0;
  for (uint32_t i = 0; i < next_unused_; ++i) {
    ObjectEntry& entry = Slot(i);
    if (!(entry.flags & kEntryUsed)) continue;
    const char* old_key = old_arena[entry.key_ref / kArenaChunkBytes].get();
    // Never fails: the live keys fitted before, and packing them cannot take more chunks.
    entry.key_ref =
        StoreKey(absl::string_view(old_key + entry.key_ref % kArenaChunkBytes, entry.key_len));
  }
}

size_t ObjectTable::MemoryBytes() const {
  return entries_.size() * kEntriesPerChunk * sizeof(ObjectEntry) +
         arena_.size() * size_t{kArenaChunkBytes} + index_.capacity() * (sizeof(uint32_t) + 1);
}

}  // namespace yuebing::master
