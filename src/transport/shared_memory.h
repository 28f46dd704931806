// Same-host shared memory: segments allocated with memfd so that another process of this host can
// map them (through /proc/<owner pid>/fd/<fd>) and copy with one memcpy, and page prefaulting.
//
// Thread safety: the free functions are thread-safe; ShmPeerMappings is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "transport/segment_descriptor.h"
#include "yuebing/common/mutex.h"

namespace yuebing::transport {

struct SharedRegion {
  void* addr = nullptr;
  size_t length = 0;
  int fd = -1;
};

// Creates a memfd of `length` bytes and maps it read-write, pages populated. Errors:
// kInvalidArgument (zero length), kResourceExhausted.
absl::StatusOr<SharedRegion> AllocateSharedRegion(size_t length);
void FreeSharedRegion(const SharedRegion& region);

// Touches every page of [addr, addr+length) so later accesses do not fault, without changing any
// byte (MADV_POPULATE_WRITE; falls back to reading each page). Best effort: never fails.
void PrefaultMemory(void* addr, size_t length);

// Identity of this host and pid namespace: two processes with equal ids can reach each other's
// memfds through /proc.
const std::string& LocalHostId();

// One peer buffer mapped into this process; unmapped when the last holder lets go.
class MappedRegion {
 public:
  MappedRegion(char* data, size_t length) : data_(data), length_(length) {}
  ~MappedRegion();
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;
  char* data() const { return data_; }
  size_t length() const { return length_; }

 private:
  char* const data_;
  const size_t length_;
};

// Where a remote range lies in this process: `address` is valid while `region` is held.
struct ShmTarget {
  std::shared_ptr<const MappedRegion> region;
  char* address = nullptr;
};

// Mappings of one peer segment's shm buffers into this process, created on first use.
class ShmPeerMappings {
 public:
  ShmPeerMappings() = default;
  ShmPeerMappings(const ShmPeerMappings&) = delete;
  ShmPeerMappings& operator=(const ShmPeerMappings&) = delete;

  // Returns the local address of remote [addr, addr+length) if the descriptor says it lies in a
  // shm buffer of a process on this host and that buffer could be mapped; an empty target
  // otherwise (the caller falls back to TCP).
  ShmTarget Translate(const SegmentDescriptor& descriptor, uint64_t addr, uint64_t length);

  // Drops mappings of buffers that are not in `descriptor` any more.
  void Retain(const SegmentDescriptor& descriptor);

 private:
  struct Mapping {
    uint64_t length = 0;
    uint64_t shm_id = 0;
    std::shared_ptr<const MappedRegion> region;  // null: mapping failed, do not retry
  };
  yuebing::Mutex mu_;
  std::map<uint64_t, Mapping> mappings_ ABSL_GUARDED_BY(mu_);  // by remote buffer address
};

}  // namespace yuebing::transport
