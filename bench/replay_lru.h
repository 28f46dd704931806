// The ideal-LRU reference for trace replay: an exact LRU cache of prefix blocks with the same
// prefix-hit rule as the replay (a request hits the longest leading run of its blocks that are
// cached). Used to judge the store's hit rate against what a perfect LRU of equal capacity gets.
//
// Thread safety: none; one replay owns one model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <unordered_map>

#include "absl/types/span.h"

namespace yuebing::bench {

class PrefixLru {
 public:
  // A cache of at most `capacity_blocks` blocks (0: caches nothing).
  explicit PrefixLru(uint64_t capacity_blocks);

  // Serves one request: returns the length of the longest leading run of `ids` that is cached,
  // then makes every id of the request the most recently used (in order, so the last id is the
  // newest), inserting the missing ones and evicting the least recently used beyond capacity.
  size_t Access(absl::Span<const uint64_t> ids);

  bool Contains(uint64_t id) const { return index_.count(id) != 0; }
  uint64_t size() const { return index_.size(); }
  uint64_t capacity() const { return capacity_; }

 private:
  void Touch(uint64_t id);

  uint64_t capacity_;
  std::list<uint64_t> order_;  // front: most recently used
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> index_;
};

}  // namespace yuebing::bench
