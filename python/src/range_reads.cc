// get_into_ranges: see range_reads.h.
#include "range_reads.h"

#include <utility>

#include "binding_util.h"

namespace yuebing::python {

void RegisteredRegions::Add(uintptr_t start, uint64_t length) {
  yuebing::MutexLock lock(&mu_);
  regions_[start] = length;
}

void RegisteredRegions::Remove(uintptr_t start) {
  yuebing::MutexLock lock(&mu_);
  regions_.erase(start);
}

void RegisteredRegions::Clear() {
  yuebing::MutexLock lock(&mu_);
  regions_.clear();
}

uint64_t RegisteredRegions::CapacityFrom(uintptr_t address) const {
  yuebing::MutexLock lock(&mu_);
  auto it = regions_.upper_bound(address);
  if (it == regions_.begin()) return 0;
  --it;
  const uint64_t into = address - it->first;
  return into < it->second ? it->second - into : 0;
}

RangeResults ReadRanges(store::Client* client, const RegisteredRegions& regions,
                        const std::vector<uintptr_t>& buffer_ptrs,
                        const std::vector<std::vector<std::string>>& all_keys,
                        const std::vector<std::vector<std::vector<uint64_t>>>& all_dst_offsets,
                        const std::vector<std::vector<std::vector<uint64_t>>>& all_src_offsets,
                        const std::vector<std::vector<std::vector<uint64_t>>>& all_sizes) {
  // The result's shape follows buffer_ptrs, all_keys and all_dst_offsets (one row, or one
  // fragment, where those lack an entry), every slot -600 until read.
  const size_t buffers = buffer_ptrs.size();
  RangeResults results(buffers);
  for (size_t i = 0; i < buffers; ++i) {
    const size_t rows = i < all_keys.size() ? all_keys[i].size() : 1;
    results[i].resize(rows);
    for (size_t j = 0; j < rows; ++j) {
      const bool has = i < all_dst_offsets.size() && j < all_dst_offsets[i].size();
      results[i][j].assign(has ? all_dst_offsets[i][j].size() : 1, kInvalidParams);
    }
  }
  if (client == nullptr || all_keys.size() != buffers || all_dst_offsets.size() != buffers ||
      all_src_offsets.size() != buffers || all_sizes.size() != buffers) {
    return results;
  }
  // One read per (buffer, key) row whose shape is sound; fragments that do not fit their
  // destination stay -600 and are not read.
  struct Row {
    size_t buffer = 0, key = 0;
    std::vector<size_t> fragments;  // indexes of the fragments read, in `ranges` order
  };
  std::vector<Row> rows;
  std::vector<std::string> keys;
  std::vector<std::vector<store::Client::Range>> ranges;
  for (size_t i = 0; i < buffers; ++i) {
    const size_t n = all_keys[i].size();
    if (all_dst_offsets[i].size() != n || all_src_offsets[i].size() != n ||
        all_sizes[i].size() != n) {
      continue;
    }
    const uint64_t capacity = buffer_ptrs[i] == 0 ? 0 : regions.CapacityFrom(buffer_ptrs[i]);
    if (capacity == 0) continue;  // null or unregistered destination
    for (size_t j = 0; j < n; ++j) {
      const std::vector<uint64_t>& dst = all_dst_offsets[i][j];
      const std::vector<uint64_t>& src = all_src_offsets[i][j];
      const std::vector<uint64_t>& size = all_sizes[i][j];
      if (src.size() != dst.size() || size.size() != dst.size()) continue;
      Row row{i, j, {}};
      std::vector<store::Client::Range> row_ranges;
      for (size_t k = 0; k < dst.size(); ++k) {
        if (size[k] > capacity || dst[k] > capacity - size[k]) continue;  // past its memory
        row.fragments.push_back(k);
        row_ranges.push_back(
            store::Client::Range{AddressOf(buffer_ptrs[i] + dst[k]), src[k], size[k]});
      }
      rows.push_back(std::move(row));
      keys.push_back(all_keys[i][j]);
      ranges.push_back(std::move(row_ranges));
    }
  }
  if (keys.empty()) return results;
  const std::vector<absl::StatusOr<std::vector<absl::Status>>> read =
      client->BatchGetRanges(keys, ranges);
  for (size_t r = 0; r < rows.size(); ++r) {
    std::vector<int64_t>& out = results[rows[r].buffer][rows[r].key];
    for (size_t f = 0; f < rows[r].fragments.size(); ++f) {
      const size_t k = rows[r].fragments[f];
      if (!read[r].ok()) {
        out[k] = Code(read[r].status());
      } else if (read[r]->size() > f && !(*read[r])[f].ok()) {
        out[k] = Code((*read[r])[f]);
      } else {
        out[k] = static_cast<int64_t>(ranges[r][f].size);
      }
    }
  }
  return results;
}

std::vector<int64_t> SessionRanges(const SessionTransfer& transfer,
                                   const std::vector<std::string>& keys,
                                   const std::vector<std::vector<uintptr_t>>& ptrs,
                                   const std::vector<std::vector<uint64_t>>& sizes,
                                   const std::vector<std::vector<uint64_t>>& offsets) {
  std::vector<int64_t> out(keys.size(), kInvalidParams);
  if (ptrs.size() != keys.size() || sizes.size() != keys.size() || offsets.size() != keys.size()) {
    return out;
  }
  std::vector<size_t> rows;  // keys whose lists agree, in call order
  std::vector<std::string> read_keys;
  std::vector<std::vector<store::Client::Range>> ranges;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (ptrs[i].size() != sizes[i].size() || offsets[i].size() != sizes[i].size()) continue;
    std::vector<store::Client::Range> key_ranges;
    for (size_t j = 0; j < sizes[i].size(); ++j) {
      key_ranges.push_back(store::Client::Range{AddressOf(ptrs[i][j]), offsets[i][j], sizes[i][j]});
    }
    rows.push_back(i);
    read_keys.push_back(keys[i]);
    ranges.push_back(std::move(key_ranges));
  }
  if (read_keys.empty()) return out;
  const std::vector<absl::StatusOr<uint64_t>> moved = transfer(read_keys, ranges);
  for (size_t r = 0; r < rows.size(); ++r) {
    out[rows[r]] = moved[r].ok() ? static_cast<int64_t>(*moved[r]) : Code(moved[r].status());
  }
  return out;
}

}  // namespace yuebing::python
