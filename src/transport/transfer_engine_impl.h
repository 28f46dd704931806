// The transfer engine's implementation. It owns this engine's segment (memory registry,
// shm allocations, descriptor publication: transfer_engine_memory.cc), the TCP server, the opened
// peer segments, the batches and the watchdog (transfer_engine_impl.cc), and hands every request
// to a transport (transport.h) chosen by locality.
//
// CreateTransferEngine (TransferEngine::Create calls it) has a seam for tests: any of the four
// transports may be replaced by another implementation of the Transport contract (for instance
// one that records what it is offered, or one that never finishes a request). The engine still
// owns its TCP peers and watchdog; a replacement is only used for routing.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "transport/local_transport.h"
#include "transport/memory_registry.h"
#include "transport/metadata_store.h"
#include "transport/object_reader.h"
#include "transport/peer_segment.h"
#include "transport/rdma/rdma_engine_transport.h"
#include "transport/shared_memory.h"
#include "transport/shm_transport.h"
#include "transport/tcp_server.h"
#include "transport/tcp_transport.h"
#include "transport/transfer_batch.h"
#include "transport/transport.h"
#include "yuebing/common/mutex.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::transport {

// Transports that replace the engine's own; null members keep the engine's. A replaced rdma
// transport is used even where the engine has no RDMA.
struct TransportOverrides {
  std::shared_ptr<Transport> local;
  std::shared_ptr<Transport> shm;
  std::shared_ptr<Transport> rdma;
  std::shared_ptr<Transport> tcp;
};

class TransferEngineImpl final : public TransferEngine {
 public:
  TransferEngineImpl(const TransferEngineOptions& options, TransportOverrides overrides)
      : options_(options), overrides_(std::move(overrides)) {}
  ~TransferEngineImpl() override;

  absl::Status Init();

  const std::string& LocalSegmentName() const override { return segment_name_; }
  uint16_t RpcPort() const override { return server_->port(); }
  absl::Status RegisterLocalMemory(void* addr, size_t length, const std::string& location) override;
  absl::Status UnregisterLocalMemory(void* addr) override;
  absl::StatusOr<void*> AllocateSharedMemory(size_t length) override;
  absl::Status FreeSharedMemory(void* addr) override;
  absl::StatusOr<SegmentHandle> OpenSegment(const std::string& segment_name) override;
  absl::Status CloseSegment(SegmentHandle handle) override;
  absl::StatusOr<std::vector<SegmentBuffer>> ListSegmentBuffers(
      const std::string& segment_name) override;
  absl::StatusOr<BatchId> AllocateBatch(size_t capacity) override;
  absl::Status FreeBatch(BatchId batch) override;
  absl::Status SubmitTransfer(BatchId batch, absl::Span<const TransferRequest> requests) override;
  absl::StatusOr<TransferStatus> GetTransferStatus(BatchId batch, size_t task_id) override;
  absl::StatusOr<TransferStatus> WaitTransfer(BatchId batch, size_t task_id,
                                              std::chrono::milliseconds timeout) override;
  absl::StatusOr<std::vector<TransferStatus>> WaitBatch(BatchId batch,
                                                        std::chrono::milliseconds timeout) override;
  absl::StatusOr<std::vector<TransferStatus>> WaitAndFreeBatch(BatchId batch) override;
  TransferEngineStats Stats() const override;
  void SetObjectSource(ObjectSource source) override {
    server_->SetObjectSource(std::move(source));
  }
  // In object_reader.cc.
  absl::StatusOr<uint64_t> ReadObject(const std::string& segment_name, absl::string_view key,
                                      absl::Span<const ObjectBuffer> dest,
                                      std::chrono::steady_clock::time_point deadline) override;
  using TransferEngine::ReadObject;
  absl::Status Probe(const std::string& segment_name,
                     std::chrono::steady_clock::time_point deadline) override;

 private:
  absl::Status Register(const RegisteredBuffer& buffer);
  void UnregisterRdma(uint64_t addr) {
    if (rdma_ != nullptr) rdma_->UnregisterMemory(addr);
  }
  // Builds the transports and the chains tried per locality (after the server is up).
  absl::Status InitTransports();
  // The descriptor of this engine's segment as it is now, stamped with `version`.
  // include_shm=false hides the memfd numbers (for the metadata server when a secret is set).
  std::string DescribeLocal(uint64_t version, bool include_shm);
  absl::Status Publish();
  absl::StatusOr<SegmentDescriptor> FetchDescriptor(const std::string& name);
  absl::StatusOr<std::shared_ptr<PeerSegment>> FindSegment(SegmentHandle handle);
  absl::Status Refresh(PeerSegment& segment);
  std::shared_ptr<TransferBatch> FindBatch(BatchId batch);
  // The batch, when it exists and `task_id` was submitted to it; kInvalidArgument otherwise.
  absl::StatusOr<std::shared_ptr<TransferBatch>> FindBatchWithTask(BatchId batch, size_t task_id);
  // Offers `work` (requests to `target`) to each transport of `chain` in turn.
  static void Route(PeerSegment* target, absl::Span<Transport* const> chain, TransferBatch* batch,
                    std::vector<TransportWork>& work, SteadyTime deadline);
  void WatchdogLoop();
  // Frees retired batches whose last request ended.
  void ReapRetiredBatches();

  const TransferEngineOptions options_;
  TransportOverrides overrides_;
  std::unique_ptr<MetadataStore> metadata_;
  MemoryRegistry registry_;
  std::unique_ptr<TcpServer> server_;
  std::unique_ptr<ObjectReader> object_reader_;  // made in Init
  std::string segment_name_;
  std::string tcp_host_;
  uint64_t epoch_ = 0;

  // Transports the engine owns (rdma_ null unless protocol "rdma" found a device), and the ones
  // requests go to (the owned ones unless overridden), in the order they are tried.
  std::unique_ptr<LocalTransport> local_;
  std::unique_ptr<ShmTransport> shm_;
  std::unique_ptr<TcpTransport> tcp_;
  std::unique_ptr<RdmaEngineTransport> rdma_;
  Transport* local_route_ = nullptr;
  Transport* shm_route_ = nullptr;
  Transport* rdma_route_ = nullptr;  // null without RDMA
  Transport* tcp_route_ = nullptr;
  std::vector<Transport*> same_host_chain_;  // shm, rdma (if any), tcp
  std::vector<Transport*> remote_chain_;     // rdma (if any), tcp
  std::vector<Transport*> all_transports_;   // each once, for the watchdog

  yuebing::Mutex publish_mu_;
  uint64_t descriptor_version_ ABSL_GUARDED_BY(publish_mu_) = 0;

  yuebing::Mutex shm_mu_;
  absl::flat_hash_map<uintptr_t, SharedRegion> owned_shm_ ABSL_GUARDED_BY(shm_mu_);
  uint64_t next_shm_id_ ABSL_GUARDED_BY(shm_mu_) = 1;

  yuebing::Mutex segments_mu_;
  absl::flat_hash_map<SegmentHandle, std::shared_ptr<PeerSegment>> segments_
      ABSL_GUARDED_BY(segments_mu_);
  absl::flat_hash_map<std::string, SegmentHandle> handles_by_name_ ABSL_GUARDED_BY(segments_mu_);
  SegmentHandle next_handle_ ABSL_GUARDED_BY(segments_mu_) = 1;

  yuebing::Mutex batches_mu_;
  absl::flat_hash_map<BatchId, std::shared_ptr<TransferBatch>> batches_
      ABSL_GUARDED_BY(batches_mu_);
  BatchId next_batch_ ABSL_GUARDED_BY(batches_mu_) = 1;
  // Batches WaitAndFreeBatch gave up on (see its contract): kept until idle.
  std::vector<std::shared_ptr<TransferBatch>> retired_ ABSL_GUARDED_BY(batches_mu_);
  std::atomic<uint64_t> overdue_requests_{0};

  yuebing::Mutex watchdog_mu_;
  bool stopping_ ABSL_GUARDED_BY(watchdog_mu_) = false;
  std::thread watchdog_;
};

absl::StatusOr<std::unique_ptr<TransferEngine>> CreateTransferEngine(
    const TransferEngineOptions& options, TransportOverrides overrides = {});

}  // namespace yuebing::transport
