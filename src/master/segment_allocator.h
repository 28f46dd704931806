// Range allocator for one mounted segment: hands out aligned byte ranges of a contiguous region.
//
// Best fit over a free list kept twice (by offset for coalescing, by length for the fit), both in
// B-trees, so a free range costs a few dozen bytes and every operation is O(log ranges). Freed
// ranges merge with free neighbours, so the number of free ranges never exceeds the number of
// live allocations + 1.
//
// Offsets are relative to the segment base; every returned offset satisfies
// (base + offset) % alignment == 0 and every range length is a multiple of the alignment. The
// allocator does not remember allocation lengths: callers pass the length back to Free() and
// must pass the same (aligned) length they were given.
//
// Not thread-safe: the owner serialises calls.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"

namespace yuebing::master {

class SegmentAllocator {
 public:
  // `alignment` must be a power of two >= 1. The usable region is the largest aligned sub-range of
  // [base, base + size); capacity() says how large it is (0 when none fits).
  SegmentAllocator(uint64_t base, uint64_t size, uint64_t alignment);

  // `length` rounded up to the alignment; nullopt when that overflows.
  std::optional<uint64_t> AlignedLength(uint64_t length) const;

  // Offset of a new range of AlignedLength(length) bytes, or nullopt when no free range is large
  // enough (or length is 0).
  std::optional<uint64_t> Allocate(uint64_t length);

  // Takes [offset, offset + AlignedLength(length)) out of the free list (a range an earlier
  // master handed out, restored after a restart). False (and nothing changes) when the range is
  // outside the usable region, misaligned, or not wholly free.
  bool AllocateAt(uint64_t offset, uint64_t length);

  // Returns [offset, offset + AlignedLength(length)) to the free list. False (and nothing changes)
  // when the range is outside the usable region, misaligned, or overlaps free space (a double
  // free): callers treat that as a bug.
  bool Free(uint64_t offset, uint64_t length);

  uint64_t capacity() const { return capacity_; }
  uint64_t used_bytes() const { return capacity_ - free_bytes_; }
  uint64_t free_bytes() const { return free_bytes_; }
  uint64_t alignment() const { return alignment_; }
  // Length of the largest free range (what one Allocate can get at most).
  uint64_t largest_free() const;
  size_t free_ranges() const { return by_offset_.size(); }

 private:
  void InsertFree(uint64_t offset, uint64_t length);
  void EraseFree(uint64_t offset, uint64_t length);

  uint64_t alignment_;
  uint64_t first_;     // offset of the first usable byte
  uint64_t capacity_;  // usable bytes from first_
  uint64_t free_bytes_;
  absl::btree_map<uint64_t, uint64_t> by_offset_;             // offset -> length
  absl::btree_set<std::pair<uint64_t, uint64_t>> by_length_;  // (length, offset)
};

}  // namespace yuebing::master
