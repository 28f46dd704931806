// One shard's object table: key -> compact fixed-size entry, with no per-object heap allocation.
//
// Layout (what makes an object cost ~75 bytes plus its key):
//   - entries live in fixed chunks of 1024 ObjectEntry (64 bytes each), addressed by a uint32
//     index; free entries are chained through key_ref;
//   - key bytes live back to back in 64 KiB arena chunks; an entry holds the arena offset and
//     length; erased keys become garbage that is compacted away once it outweighs live keys
//     and a quarter of the entries' bytes (at least 16 KiB), so it stays bounded under churn;
//   - the hash index is a swiss table of uint32 entry indices (5 bytes a slot) whose hash and
//     equality read the key through the table, so lookups by key need no std::string.
//
// Not thread-safe: the owning shard's mutex serialises every call. Indices stay valid until the
// entry is erased; key views stay valid until the next Insert or Erase.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "yuebing/common/limits.h"

namespace yuebing::master {

// ObjectEntry::flags bits.
inline constexpr uint8_t kEntryUsed = 1;
inline constexpr uint8_t kEntryComplete = 2;  // visible to readers
inline constexpr uint8_t kEntrySoftPin = 4;
inline constexpr uint8_t kEntryHardPin = 8;
inline constexpr uint8_t kEntryPendingUpsert = 16;  // a replacing put is in progress (side table)
inline constexpr uint8_t kEntrySpilling = 32;  // being copied to a store's disk tier (side table)
// Chosen by a lazy eviction pass: still readable, freed when a put needs the memory (side table).
inline constexpr uint8_t kEntryCondemned = 64;

// Per-object metadata. Per-segment data (name, base, epoch) is stored once in the segment table
// and referenced by slot; replicas beyond the first live in a per-shard side table.
struct ObjectEntry {
  uint64_t size;
  uint64_t aux;          // complete: checksum; in progress: writer client serial
  int64_t time_ns;       // complete: read lease deadline (0: none); in progress: put start time
  uint64_t last_access;  // LRU sequence number (larger = more recent)
  uint32_t seg_prev;     // neighbours in the list of the first replica's segment (SegmentMembers)
  uint32_t seg_next;
  uint64_t offset;   // first replica: offset inside its segment
  uint32_t segment;  // first replica: segment slot
  uint32_t key_ref;  // arena offset of the key; next free entry while unused
  uint16_t key_len;
  uint8_t flags;
  uint8_t replicas;  // replica count (>= 1 while used)
  uint32_t hold;     // complete: index + 1 of its ReadHold in the shard (0: none)
};
static_assert(sizeof(ObjectEntry) == 64, "ObjectEntry should stay one cache line");
static_assert(limits::kMaxConfigurableKeyBytes <= UINT16_MAX, "key_len holds every key length");
static_assert(limits::kMaxReplicas <= UINT8_MAX, "replicas holds every replica count");

class ObjectTable {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;
  // Longest key the table can hold (ObjectEntry::key_len is 16 bits).
  static constexpr uint32_t kMaxKeyBytes = limits::kMaxConfigurableKeyBytes;
  static constexpr uint32_t kMaxEntries = 1u << 30;

  ObjectTable();
  ObjectTable(const ObjectTable&) = delete;
  ObjectTable& operator=(const ObjectTable&) = delete;

  // Index of the entry for `key`, or kNone.
  uint32_t Find(absl::string_view key) const;
  // Adds a zeroed entry (flags == kEntryUsed) for `key`, which must be absent and 1..kMaxKeyBytes
  // long. kNone when the table is full.
  uint32_t Insert(absl::string_view key);
  // Removes a used entry and its key.
  void Erase(uint32_t index);

  ObjectEntry& at(uint32_t index) { return Slot(index); }
  const ObjectEntry& at(uint32_t index) const { return Slot(index); }
  absl::string_view key(uint32_t index) const {
    const ObjectEntry& entry = Slot(index);
    return absl::string_view(
        arena_[entry.key_ref / kArenaChunkBytes].get() + entry.key_ref % kArenaChunkBytes,
        entry.key_len);
  }

  size_t size() const { return index_.size(); }
  // Every used entry has an index below this; entries there may be unused (check kEntryUsed).
  uint32_t index_limit() const { return next_unused_; }
  // Bytes held by this table's structures (entries, keys, hash index), for stats and tests.
  size_t MemoryBytes() const;

 private:
  static constexpr uint32_t kEntriesPerChunk = 1024;
  static constexpr uint32_t kArenaChunkBytes = 64 * 1024;
  static constexpr uint32_t kMaxArenaChunks = UINT32_MAX / kArenaChunkBytes;

  struct Hash {
    using is_transparent = void;
    const ObjectTable* table;
    size_t operator()(uint32_t index) const;
    size_t operator()(absl::string_view key) const;
  };
  struct Eq {
    using is_transparent = void;
    const ObjectTable* table;
    bool operator()(uint32_t a, uint32_t b) const { return a == b; }
    bool operator()(absl::string_view a, uint32_t b) const { return a == table->key(b); }
    bool operator()(uint32_t a, absl::string_view b) const { return table->key(a) == b; }
    bool operator()(absl::string_view a, absl::string_view b) const { return a == b; }
  };

  ObjectEntry& Slot(uint32_t index) const {
    return entries_[index / kEntriesPerChunk][index % kEntriesPerChunk];
  }
  // Arena offset of a copy of `key`, or kNone when the arena is full.
  uint32_t StoreKey(absl::string_view key);
  void CompactKeysIfWasteful();

  std::vector<std::unique_ptr<ObjectEntry[]>> entries_;
  uint32_t next_unused_ = 0;    // entries at and above are never used yet
  uint32_t free_head_ = kNone;  // chain of erased entries

  std::vector<std::unique_ptr<char[]>> arena_;
  uint32_t arena_tail_ = 0;  // arena offset where the next key goes
  uint64_t live_key_bytes_ = 0;
  uint64_t garbage_key_bytes_ = 0;

  absl::flat_hash_set<uint32_t, Hash, Eq> index_;
};

}  // namespace yuebing::master
