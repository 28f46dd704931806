#include "transport/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/status.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace yuebing::transport {

absl::StatusOr<SharedRegion> AllocateSharedRegion(size_t length) {
  if (length == 0) return absl::InvalidArgumentError("cannot allocate zero bytes");
  int fd = memfd_create("yuebing-segment", MFD_CLOEXEC);
  if (fd < 0) return ErrnoToStatus("memfd_create");
  if (ftruncate(fd, static_cast<off_t>(length)) != 0) {
    absl::Status status = ErrnoToStatus(absl::StrCat("ftruncate memfd to ", length));
    close(fd);
    return status;
  }
  void* addr = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (addr == MAP_FAILED) {
    absl::Status status = ErrnoToStatus(absl::StrCat("mmap ", length, " shared bytes"));
    close(fd);
    return absl::ResourceExhaustedError(status.message());
  }
  return SharedRegion{addr, length, fd};
}

void FreeSharedRegion(const SharedRegion& region) {
  if (region.addr != nullptr) munmap(region.addr, region.length);
  if (region.fd >= 0) close(region.fd);
}

void PrefaultMemory(void* addr, size_t length) {
  if (addr == nullptr || length == 0) return;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t start = reinterpret_cast<uintptr_t>(addr) & ~(page - 1);
  uintptr_t end = reinterpret_cast<uintptr_t>(addr) + length;
  if (madvise(reinterpret_cast<void*>(start), end - start, MADV_POPULATE_WRITE) == 0) return;
  // Older kernels or read-only memory: reading at least maps the pages that exist.
  for (uintptr_t p = start; p < end; p += page) {
    (void)*reinterpret_cast<volatile const char*>(std::max(p, reinterpret_cast<uintptr_t>(addr)));
  }
}

const std::string& LocalHostId() {
  static const std::string* id = [] {
    std::string boot_id;
    std::ifstream("/proc/sys/kernel/random/boot_id") >> boot_id;
    char ns[128] = {0};
    ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof(ns) - 1);
    return new std::string(absl::StrCat(boot_id, "/", n > 0 ? std::string(ns, n) : "pid:?"));
  }();
  return *id;
}

MappedRegion::~MappedRegion() { munmap(data_, length_); }

ShmTarget ShmPeerMappings::Translate(const SegmentDescriptor& descriptor, uint64_t addr,
                                     uint64_t length) {
  if (descriptor.host_id != LocalHostId()) return {};
  const BufferDescriptor* buffer = descriptor.FindBuffer(addr, length);
  if (buffer == nullptr || buffer->shm_fd < 0) return {};
  yuebing::MutexLock lock(&mu_);
  auto it = mappings_.find(buffer->addr);
  if (it == mappings_.end() || it->second.length != buffer->length ||
      it->second.shm_id != buffer->shm_id) {
    Mapping mapping{buffer->length, buffer->shm_id, nullptr};
    std::string path = absl::StrCat("/proc/", descriptor.pid, "/fd/", buffer->shm_fd);
    int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
      void* local =
          mmap(nullptr, buffer->length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
      close(fd);
      if (local != MAP_FAILED) {
        mapping.region = std::make_shared<MappedRegion>(static_cast<char*>(local), buffer->length);
      }
    }
    if (mapping.region == nullptr) {
      YB_LOG_INFO("shared memory of {} not reachable ({}: {}); using TCP", descriptor.name, path,
                  std::strerror(errno));
    }
    it = mappings_.insert_or_assign(buffer->addr, std::move(mapping)).first;
  }
  if (it->second.region == nullptr) return {};
  return ShmTarget{it->second.region, it->second.region->data() + (addr - buffer->addr)};
}

void ShmPeerMappings::Retain(const SegmentDescriptor& descriptor) {
  yuebing::MutexLock lock(&mu_);
  for (auto it = mappings_.begin(); it != mappings_.end();) {
    const BufferDescriptor* buffer = descriptor.FindBuffer(it->first, it->second.length);
    if (buffer == nullptr || buffer->addr != it->first || buffer->shm_id != it->second.shm_id) {
      it = mappings_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace yuebing::transport
