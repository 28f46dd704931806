// The thin layer over libibverbs: every verbs call of the RDMA transport is here. Compiled only
// when the build found libibverbs. Nothing here has run on RDMA hardware in this project.
//
// Lifetime: a Device outlives the QueuePairs and memory regions made from it.
// Thread safety: PostRdma on one QueuePair is serialized by the caller; Poll is called by one
// thread per Device; Register/Deregister/CreateQp may run concurrently (verbs allows it).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "transport/rdma/qp_exchange.h"
#include "transport/rdma/rdma_config.h"

namespace yuebing::transport::rdma::verbs {

// Names from ibv_get_device_list; empty when there is none.
std::vector<std::string> DeviceNames();

struct Completion {
  uint64_t wr_id = 0;
  bool ok = false;
  bool retryable = false;  // a transport/link error that another path may not have
  bool flushed = false;    // flushed because the QP went to ERROR (not a fault of this one)
  std::string error;       // ibv_wc_status_str, empty when ok
};

struct RemoteQp {
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint16_t lid = 0;
  Gid gid{};
  uint32_t mtu = 4096;
};

class QueuePair {
 public:
  QueuePair(ibv_qp* qp, uint8_t port, int gid_index, uint32_t local_mtu, uint8_t max_rd_atomic);
  ~QueuePair();
  QueuePair(const QueuePair&) = delete;
  QueuePair& operator=(const QueuePair&) = delete;

  uint32_t qpn() const { return qp_->qp_num; }
  // RESET -> INIT -> RTR -> RTS against `remote`; `local_psn` is our first send PSN.
  // Errors: kInternal naming the failed transition.
  absl::Status Connect(const RemoteQp& remote, uint32_t local_psn);
  // One signaled RDMA READ or WRITE. Errors: kResourceExhausted (send queue full), kInternal.
  absl::Status PostRdma(bool write, uint64_t local_addr, uint32_t lkey, uint32_t length,
                        uint64_t remote_addr, uint32_t rkey, uint64_t wr_id);
  // Moves the QP to ERROR: every outstanding work request completes with a flush error.
  void MoveToError();

 private:
  ibv_qp* qp_;
  const uint8_t port_;
  const int gid_index_;
  const uint32_t local_mtu_;
  const uint8_t max_rd_atomic_;
};

class Device {
 public:
  // Opens `name`, allocates a PD and a CQ of config.max_cqe entries, reads port and GID.
  // Errors: kUnavailable naming the device and the failed call.
  static absl::StatusOr<std::unique_ptr<Device>> Open(const std::string& name,
                                                      const RdmaConfig& config);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const std::string& name() const { return name_; }
  uint16_t lid() const { return lid_; }
  const Gid& gid() const { return gid_; }
  uint32_t mtu() const { return mtu_; }

  // Registers memory for local write and remote read/write. Errors: kInternal with errno.
  absl::StatusOr<ibv_mr*> Register(void* addr, size_t length);
  static void Deregister(ibv_mr* mr);

  // An RC QP on this device's PD and CQ with `max_wr` send entries.
  absl::StatusOr<std::unique_ptr<QueuePair>> CreateQp(uint32_t max_wr);

  // Non-blocking: appends up to `max` completions to `out`. Errors: kInternal (CQ broken).
  absl::Status Poll(int max, std::vector<Completion>& out);

 private:
  Device() = default;
  std::string name_;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_ = nullptr;
  uint16_t lid_ = 0;
  Gid gid_{};
  int gid_index_ = -1;  // -1: InfiniBand without GRH
  uint32_t mtu_ = 4096;
  uint8_t max_rd_atomic_ = 1;
  uint8_t port_ = 1;
  uint32_t max_cqe_ = 0;
  uint32_t max_qp_wr_ = 0;
};

}  // namespace yuebing::transport::rdma::verbs
