// A bounded map from peer key to endpoint with least-recently-used eviction. Values are held by
// shared_ptr: an evicted endpoint stays alive while a user still holds it (slices in flight), and
// is destroyed when the last holder lets go. Plain C++, unit-tested.
//
// Thread safety: all methods are thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "yuebing/common/mutex.h"

namespace yuebing::transport::rdma {

template <typename Value>
class EndpointCache {
 public:
  // capacity >= 1.
  explicit EndpointCache(size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}

  // The cached endpoint (now the most recently used), or nullptr.
  std::shared_ptr<Value> Find(const std::string& key) {
    yuebing::MutexLock lock(&mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }

  // Caches `value` under `key` unless another thread cached one first; returns the cached one.
  // Endpoints pushed out by the bound are appended to `evicted` (the caller shuts them down
  // outside any lock of its own).
  std::shared_ptr<Value> Insert(const std::string& key, std::shared_ptr<Value> value,
                                std::vector<std::shared_ptr<Value>>* evicted) {
    yuebing::MutexLock lock(&mu_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return it->second->second;
    }
    order_.emplace_front(key, std::move(value));
    index_[key] = order_.begin();
    while (order_.size() > capacity_) {
      if (evicted != nullptr) evicted->push_back(std::move(order_.back().second));
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    return order_.front().second;
  }

  // Drops `key` (e.g. after its endpoint failed); returns the dropped endpoint or nullptr.
  std::shared_ptr<Value> Erase(const std::string& key) {
    yuebing::MutexLock lock(&mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    std::shared_ptr<Value> out = std::move(it->second->second);
    order_.erase(it->second);
    index_.erase(it);
    return out;
  }

  // Removes and returns every endpoint.
  std::vector<std::shared_ptr<Value>> Clear() {
    yuebing::MutexLock lock(&mu_);
    std::vector<std::shared_ptr<Value>> out;
    for (auto& [key, value] : order_) out.push_back(std::move(value));
    order_.clear();
    index_.clear();
    return out;
  }

  size_t size() const {
    yuebing::MutexLock lock(&mu_);
    return order_.size();
  }
  size_t capacity() const { return capacity_; }

 private:
  using Entry = std::pair<std::string, std::shared_ptr<Value>>;
  const size_t capacity_;
  mutable yuebing::Mutex mu_;
  std::list<Entry> order_ ABSL_GUARDED_BY(mu_);  // most recently used first
  absl::flat_hash_map<std::string, typename std::list<Entry>::iterator> index_ ABSL_GUARDED_BY(mu_);
};

}  // namespace yuebing::transport::rdma
