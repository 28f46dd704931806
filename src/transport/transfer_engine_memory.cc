// TransferEngineImpl, this engine's own segment: registering and unregistering memory, shm
// allocations, and publishing the descriptor that tells peers about them.
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "transport/transfer_engine_impl.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/status.h"

namespace yuebing::transport {

std::string TransferEngineImpl::DescribeLocal(uint64_t version, bool include_shm) {
  SegmentDescriptor d;
  d.name = segment_name_;
  d.tcp_host = tcp_host_;
  d.tcp_port = server_->port();
  d.host_id = LocalHostId();
  d.pid = static_cast<int32_t>(getpid());
  d.epoch = epoch_;
  d.version = version;
  if (rdma_ != nullptr) d.rdma_nics = rdma_->LocalNics();
  for (const RegisteredBuffer& b : registry_.Snapshot()) {
    BufferDescriptor buffer;
    buffer.addr = b.addr;
    buffer.length = b.length;
    buffer.location = b.location;
    buffer.shm_fd = options_.enable_shm && include_shm ? b.shm_fd : -1;
    buffer.shm_id = b.shm_id;
    // A buffer not registered with the NICs yet is left out (published once it is).
    if (rdma_ != nullptr && !rdma_->Rkeys(b.addr, &buffer.rkeys)) continue;
    d.buffers.push_back(std::move(buffer));
  }
  return EncodeSegmentDescriptor(d);
}

absl::Status TransferEngineImpl::Publish() {
  yuebing::MutexLock lock(&publish_mu_);  // orders publications
  ++descriptor_version_;
  if (metadata_ == nullptr) return absl::OkStatus();
  // With a cluster secret the memfd numbers are given only over an authenticated DESCRIBE.
  return metadata_->Put(SegmentMetadataKey(segment_name_),
                        DescribeLocal(descriptor_version_, options_.cluster_secret.empty()));
}

absl::Status TransferEngineImpl::Register(const RegisteredBuffer& buffer) {
  if (rdma_ != nullptr) {  // before the registry, so a published buffer always has its rkeys
    YB_RETURN_IF_ERROR(rdma_->RegisterMemory(buffer.addr, buffer.length, buffer.location));
  }
  if (absl::Status added = registry_.Add(buffer); !added.ok()) {
    UnregisterRdma(buffer.addr);
    return added;
  }
  if (options_.prefault_on_register && !buffer.engine_owned) {
    PrefaultMemory(reinterpret_cast<void*>(buffer.addr), buffer.length);
  }
  absl::Status status = Publish();
  if (!status.ok()) {
    (void)registry_.Remove(buffer.addr);
    UnregisterRdma(buffer.addr);
    return absl::Status(status.code(), absl::StrCat("registered memory could not be published: ",
                                                    status.message()));
  }
  return absl::OkStatus();
}

absl::Status TransferEngineImpl::RegisterLocalMemory(void* addr, size_t length,
                                                     const std::string& location) {
  RegisteredBuffer buffer;
  buffer.addr = reinterpret_cast<uint64_t>(addr);
  buffer.length = length;
  buffer.location = location;
  return Register(buffer);
}

absl::Status TransferEngineImpl::UnregisterLocalMemory(void* addr) {
  {
    yuebing::MutexLock lock(&shm_mu_);
    if (owned_shm_.contains(reinterpret_cast<uintptr_t>(addr))) {
      return absl::InvalidArgumentError(
          "memory from AllocateSharedMemory is freed with "
          "FreeSharedMemory");
    }
  }
  YB_RETURN_IF_ERROR(registry_.Remove(reinterpret_cast<uint64_t>(addr)).status());
  UnregisterRdma(reinterpret_cast<uint64_t>(addr));
  absl::Status status = Publish();
  if (!status.ok()) YB_LOG_WARN("unregistration not published: {}", status.ToString());
  return absl::OkStatus();
}

absl::StatusOr<void*> TransferEngineImpl::AllocateSharedMemory(size_t length) {
  YB_ASSIGN_OR_RETURN(SharedRegion region, AllocateSharedRegion(length));
  RegisteredBuffer buffer;
  buffer.addr = reinterpret_cast<uint64_t>(region.addr);
  buffer.length = region.length;
  buffer.shm_fd = region.fd;
  buffer.engine_owned = true;
  {
    yuebing::MutexLock lock(&shm_mu_);
    buffer.shm_id = next_shm_id_++;
    owned_shm_[reinterpret_cast<uintptr_t>(region.addr)] = region;
  }
  absl::Status status = Register(buffer);
  if (!status.ok()) {
    yuebing::MutexLock lock(&shm_mu_);
    owned_shm_.erase(reinterpret_cast<uintptr_t>(region.addr));
    FreeSharedRegion(region);
    return status;
  }
  return region.addr;
}

absl::Status TransferEngineImpl::FreeSharedMemory(void* addr) {
  SharedRegion region;
  {
    yuebing::MutexLock lock(&shm_mu_);
    auto it = owned_shm_.find(reinterpret_cast<uintptr_t>(addr));
    if (it == owned_shm_.end()) {
      return absl::NotFoundError("address was not returned by AllocateSharedMemory");
    }
    region = it->second;
    owned_shm_.erase(it);
  }
  absl::Status status = registry_.Remove(reinterpret_cast<uint64_t>(addr)).status();
  UnregisterRdma(reinterpret_cast<uint64_t>(addr));
  FreeSharedRegion(region);
  YB_RETURN_IF_ERROR(status);
  absl::Status published = Publish();
  if (!published.ok()) YB_LOG_WARN("free not published: {}", published.ToString());
  return absl::OkStatus();
}

}  // namespace yuebing::transport
