// Which objects of one shard have a replica on each segment, in least-recently-used order, so
// that unmounting a segment visits the objects it holds and eviction the oldest objects, instead
// of every object of the master.
//
// An entry's first replica (ObjectEntry::segment) is linked into its segment's doubly linked list
// through ObjectEntry::seg_prev / seg_next: no memory beyond the 64-byte entry. Every object is in
// exactly one list. Link and Touch put an entry at the head, so a list runs from the most to the
// least recently linked or touched entry (the tail). Replicas after the first (Shard::extra,
// objects with replica_num > 1) are kept in a per-segment hash set.
//
// Contract: an entry is linked exactly while it has replicas (ObjectEntry::replicas > 0); the
// caller links after setting the entry's replicas and unlinks before changing or erasing them
// (MasterService::Impl::SetReplicas and DropObject do both). Not thread-safe: the owning shard's
// mutex serialises every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "master/object_index.h"

namespace yuebing::master {

class SegmentMembers {
 public:
  // Adds the entry at `index` to the list of its first replica's segment.
  void Link(ObjectTable& table, uint32_t index);
  // Removes the entry at `index` from the list of its first replica's segment.
  void Unlink(ObjectTable& table, uint32_t index);
  // Moves a linked entry to the head of its list (it was just used).
  void Touch(ObjectTable& table, uint32_t index);
  // Records / forgets a replica after the first on `segment`.
  void AddExtra(uint32_t segment, uint32_t index);
  void RemoveExtra(uint32_t segment, uint32_t index);

  // Up to `max` distinct entries with a replica on `segment` (none when it holds nothing here).
  std::vector<uint32_t> Some(const ObjectTable& table, uint32_t segment, size_t max) const;
  // Entries with a replica on `segment` (walks them: for tests and checks).
  size_t Count(const ObjectTable& table, uint32_t segment) const;

  // The segments with a list here, and the least recently used entry of one (kNone: none);
  // ObjectEntry::seg_prev leads from there towards the head.
  std::vector<uint32_t> Segments() const;
  uint32_t Tail(uint32_t segment) const;

 private:
  struct Ends {
    uint32_t head;
    uint32_t tail;
  };
  absl::flat_hash_map<uint32_t, Ends> lists_;  // segment slot -> its list
  absl::flat_hash_map<uint32_t, absl::flat_hash_set<uint32_t>> extra_;
};

}  // namespace yuebing::master
