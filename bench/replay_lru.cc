#include "replay_lru.h"

#include <cassert>

namespace yuebing::bench {

PrefixLru::PrefixLru(uint64_t capacity_blocks) : capacity_(capacity_blocks) {}

size_t PrefixLru::Access(absl::Span<const uint64_t> ids) {
  size_t hits = 0;
  while (hits < ids.size() && Contains(ids[hits])) ++hits;
  for (uint64_t id : ids) Touch(id);
  assert(index_.size() <= capacity_);
  assert(index_.size() == order_.size());
  return hits;
}

void PrefixLru::Touch(uint64_t id) {
  if (capacity_ == 0) return;
  auto it = index_.find(id);
  if (it != index_.end()) {
    order_.splice(order_.begin(), order_, it->second);
    return;
  }
  if (index_.size() == capacity_) {
    index_.erase(order_.back());
    order_.pop_back();
  }
  order_.push_front(id);
  index_.emplace(id, order_.begin());
}

}  // namespace yuebing::bench
