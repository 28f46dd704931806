#include "master/segment_allocator.h"

#include <cassert>
#include <iterator>

namespace yuebing::master {

SegmentAllocator::SegmentAllocator(uint64_t base, uint64_t size, uint64_t alignment)
    : alignment_(alignment == 0 ? 1 : alignment), first_(0), capacity_(0), free_bytes_(0) {
  assert((alignment_ & (alignment_ - 1)) == 0);
  const uint64_t misalignment = base & (alignment_ - 1);
  first_ = misalignment == 0 ? 0 : alignment_ - misalignment;
  if (first_ < size) capacity_ = (size - first_) & ~(alignment_ - 1);
  free_bytes_ = capacity_;
  if (capacity_ > 0) InsertFree(first_, capacity_);
}

std::optional<uint64_t> SegmentAllocator::AlignedLength(uint64_t length) const {
  if (length > UINT64_MAX - (alignment_ - 1)) return std::nullopt;
  return (length + alignment_ - 1) & ~(alignment_ - 1);
}

std::optional<uint64_t> SegmentAllocator::Allocate(uint64_t length) {
  const std::optional<uint64_t> aligned = AlignedLength(length);
  if (length == 0 || !aligned.has_value() || *aligned > free_bytes_) return std::nullopt;
  auto fit = by_length_.lower_bound({*aligned, 0});
  if (fit == by_length_.end()) return std::nullopt;
  const uint64_t range_length = fit->first;
  const uint64_t offset = fit->second;
  EraseFree(offset, range_length);
  if (range_length > *aligned) InsertFree(offset + *aligned, range_length - *aligned);
  free_bytes_ -= *aligned;
  return offset;
}

bool SegmentAllocator::AllocateAt(uint64_t offset, uint64_t length) {
  const std::optional<uint64_t> aligned = AlignedLength(length);
  if (length == 0 || !aligned.has_value() || offset < first_ ||
      ((offset - first_) & (alignment_ - 1)) != 0 || offset - first_ > capacity_ ||
      *aligned > capacity_ - (offset - first_)) {
    return false;
  }
  // The free range that starts at or before `offset` must cover the whole request.
  auto it = by_offset_.upper_bound(offset);
  if (it == by_offset_.begin()) return false;
  it = std::prev(it);
  const uint64_t range_offset = it->first;
  const uint64_t range_length = it->second;
  if (range_offset + range_length < offset + *aligned) return false;
  EraseFree(range_offset, range_length);
  if (offset > range_offset) InsertFree(range_offset, offset - range_offset);
  const uint64_t tail = range_offset + range_length - (offset + *aligned);
  if (tail > 0) InsertFree(offset + *aligned, tail);
  free_bytes_ -= *aligned;
  return true;
}

bool SegmentAllocator::Free(uint64_t offset, uint64_t length) {
  const std::optional<uint64_t> aligned = AlignedLength(length);
  if (length == 0 || !aligned.has_value() || offset < first_ ||
      ((offset - first_) & (alignment_ - 1)) != 0 || offset - first_ > capacity_ ||
      *aligned > capacity_ - (offset - first_)) {
    return false;
  }
  uint64_t start = offset;
  uint64_t end = offset + *aligned;
  // The first free range at or after `offset`, and the one before it.
  auto next = by_offset_.lower_bound(offset);
  if (next != by_offset_.end() && next->first < end) return false;
  if (next != by_offset_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second > start) return false;
    if (prev->first + prev->second == start) {
      start = prev->first;
      EraseFree(prev->first, prev->second);
    }
  }
  next = by_offset_.lower_bound(end);
  if (next != by_offset_.end() && next->first == end) {
    end += next->second;
    EraseFree(next->first, next->second);
  }
  InsertFree(start, end - start);
  free_bytes_ += *aligned;
  return true;
}

uint64_t SegmentAllocator::largest_free() const {
  return by_length_.empty() ? 0 : by_length_.rbegin()->first;
}

void SegmentAllocator::InsertFree(uint64_t offset, uint64_t length) {
  by_offset_.emplace(offset, length);
  by_length_.emplace(length, offset);
}

void SegmentAllocator::EraseFree(uint64_t offset, uint64_t length) {
  by_offset_.erase(offset);
  by_length_.erase({length, offset});
}

}  // namespace yuebing::master
