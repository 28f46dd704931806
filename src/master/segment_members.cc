#include "master/segment_members.h"

#include <algorithm>

namespace yuebing::master {

void SegmentMembers::Link(ObjectTable& table, uint32_t index) {
  ObjectEntry& entry = table.at(index);
  auto [ends, inserted] = lists_.try_emplace(entry.segment, Ends{index, index});
  entry.seg_prev = ObjectTable::kNone;
  entry.seg_next = inserted ? ObjectTable::kNone : ends->second.head;
  if (!inserted) {
    table.at(ends->second.head).seg_prev = index;
    ends->second.head = index;
  }
}

void SegmentMembers::Unlink(ObjectTable& table, uint32_t index) {
  ObjectEntry& entry = table.at(index);
  auto ends = lists_.find(entry.segment);
  if (entry.seg_prev == ObjectTable::kNone && entry.seg_next == ObjectTable::kNone) {
    lists_.erase(ends);
    return;
  }
  if (entry.seg_next != ObjectTable::kNone) {
    table.at(entry.seg_next).seg_prev = entry.seg_prev;
  } else {
    ends->second.tail = entry.seg_prev;
  }
  if (entry.seg_prev != ObjectTable::kNone) {
    table.at(entry.seg_prev).seg_next = entry.seg_next;
  } else {
    ends->second.head = entry.seg_next;
  }
  entry.seg_prev = ObjectTable::kNone;
  entry.seg_next = ObjectTable::kNone;
}

void SegmentMembers::Touch(ObjectTable& table, uint32_t index) {
  if (table.at(index).seg_prev == ObjectTable::kNone) return;  // the head already
  Unlink(table, index);
  Link(table, index);
}

void SegmentMembers::AddExtra(uint32_t segment, uint32_t index) { extra_[segment].insert(index); }

void SegmentMembers::RemoveExtra(uint32_t segment, uint32_t index) {
  auto it = extra_.find(segment);
  if (it == extra_.end()) return;
  it->second.erase(index);
  if (it->second.empty()) extra_.erase(it);
}

std::vector<uint32_t> SegmentMembers::Some(const ObjectTable& table, uint32_t segment,
                                           size_t max) const {
  std::vector<uint32_t> out;
  if (auto ends = lists_.find(segment); ends != lists_.end()) {
    for (uint32_t i = ends->second.head; i != ObjectTable::kNone && out.size() < max;
         i = table.at(i).seg_next) {
      out.push_back(i);
    }
  }
  if (auto extra = extra_.find(segment); extra != extra_.end()) {
    for (uint32_t i : extra->second) {
      if (out.size() >= max) break;
      // An entry whose first and later replicas share a segment is listed once.
      if (table.at(i).segment != segment) out.push_back(i);
    }
  }
  return out;
}

size_t SegmentMembers::Count(const ObjectTable& table, uint32_t segment) const {
  return Some(table, segment, SIZE_MAX).size();
}

std::vector<uint32_t> SegmentMembers::Segments() const {
  std::vector<uint32_t> segments;
  segments.reserve(lists_.size());
  for (const auto& [segment, ends] : lists_) segments.push_back(segment);
  return segments;
}

uint32_t SegmentMembers::Tail(uint32_t segment) const {
  auto ends = lists_.find(segment);
  return ends == lists_.end() ? ObjectTable::kNone : ends->second.tail;
}

}  // namespace yuebing::master
