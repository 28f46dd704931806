// SegmentManifest: what the master says this client's segment holds (complete objects by
// address), kept from the master's journal (MasterApi::PullJournal) so that a restarted or new
// master can be told (MasterApi::RestoreObjects). See docs/master.md "Restart and failover".
//
// The master announces an object when its put starts (with the checksum its PutEnd will record)
// and again when it is committed. Before reporting, Verified() checks each object's bytes in the
// segment against that checksum: an object whose bytes are incomplete (its put was cut short) or
// changed (its drop was lost, its range reused) is never reported, so a manifest that fell behind
// loses objects but cannot make anyone read wrong bytes. An object without a checksum is
// reported only once committed, as recorded.
//
// Thread safety: every method is thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "yuebing/common/mutex.h"
#include "yuebing/master/types.h"

namespace yuebing::store {

class SegmentManifest {
 public:
  // Applies a journal batch. A reset (changes were lost) first forgets the objects without a
  // checksum, which could not be checked later.
  void Apply(const master::JournalBatch& batch);
  // The objects whose bytes in [base, base + size) of this process match their checksum;
  // the others are forgotten.
  std::vector<master::RestoredObject> Verified(uint64_t base, uint64_t size);
  void Erase(uint64_t address);
  void Clear();
  size_t size() const;

 private:
  mutable yuebing::Mutex mu_;
  struct Record {
    master::RestoredObject object;
    bool committed = false;
  };
  absl::flat_hash_map<uint64_t, Record> by_address_ ABSL_GUARDED_BY(mu_);
};

}  // namespace yuebing::store
