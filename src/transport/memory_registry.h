// The buffers this engine registered, and the check every access goes through: an access is
// allowed only if [addr, addr+length) lies inside one registered buffer. An allowed access pins
// the buffer; unregistering waits until no access pins it, so bytes are never written into memory
// the owner has taken back.
//
// Thread safety: all methods are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "yuebing/common/mutex.h"

namespace yuebing::transport {

struct RegisteredBuffer {
  uint64_t addr = 0;
  uint64_t length = 0;
  std::string location = "cpu:0";
  int shm_fd = -1;            // memfd backing the buffer, or -1
  uint64_t shm_id = 0;        // unique id of that memfd allocation, 0 if none
  bool engine_owned = false;  // allocated by AllocateSharedMemory
};

class MemoryRegistry {
 public:
  class Pin;

  // Errors: kInvalidArgument (null, zero length, wrap-around), kAlreadyExists (overlap).
  absl::Status Add(const RegisteredBuffer& buffer);

  // Removes the buffer starting at addr after in-flight accesses to it end. Errors: kNotFound.
  absl::StatusOr<RegisteredBuffer> Remove(uint64_t addr);

  // Pins the buffer holding [addr, addr+length). Errors: kPermissionDenied when the range is not
  // inside one registered buffer (or the buffer is being removed).
  absl::StatusOr<Pin> Acquire(uint64_t addr, uint64_t length);

  std::vector<RegisteredBuffer> Snapshot() const;

  // Keeps one buffer registered while alive. Movable, not copyable.
  class Pin {
   public:
    Pin(Pin&& other) noexcept
        : registry_(other.registry_), key_(other.key_), length_(other.length_) {
      other.registry_ = nullptr;
    }
    Pin& operator=(Pin&&) = delete;
    Pin(const Pin&) = delete;
    ~Pin();

    // Whether [addr, addr+length) lies inside the pinned buffer (for boundary checks).
    bool Covers(uint64_t addr, uint64_t length) const {
      return addr >= key_ && length <= length_ && addr - key_ <= length_ - length;
    }

   private:
    friend class MemoryRegistry;
    Pin(MemoryRegistry* registry, uint64_t key, uint64_t length)
        : registry_(registry), key_(key), length_(length) {}
    MemoryRegistry* registry_;
    uint64_t key_;     // start of the pinned buffer
    uint64_t length_;  // its length
  };

 private:
  struct Entry {
    RegisteredBuffer buffer;
    int pins = 0;
    bool removing = false;
  };
  void Release(uint64_t key);

  mutable yuebing::Mutex mu_;
  std::map<uint64_t, Entry> buffers_ ABSL_GUARDED_BY(mu_);  // by start address
};

}  // namespace yuebing::transport
