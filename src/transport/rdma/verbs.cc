#include "transport/rdma/verbs.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace yuebing::transport::rdma::verbs {
namespace {

ibv_mtu MtuEnum(uint32_t bytes) {
  switch (bytes) {
    case 256:
      return IBV_MTU_256;
    case 512:
      return IBV_MTU_512;
    case 1024:
      return IBV_MTU_1024;
    case 2048:
      return IBV_MTU_2048;
    default:
      return IBV_MTU_4096;
  }
}

uint32_t MtuBytes(ibv_mtu mtu) { return 128u << static_cast<int>(mtu); }

bool Retryable(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
    case IBV_WC_WR_FLUSH_ERR:
    case IBV_WC_RESP_TIMEOUT_ERR:
    case IBV_WC_FATAL_ERR:
    case IBV_WC_GENERAL_ERR:
    case IBV_WC_LOC_QP_OP_ERR:
    case IBV_WC_REM_OP_ERR:
      return true;
    default:  // access, protection, length and invalid-request errors fail on every path
      return false;
  }
}

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

}  // namespace

std::vector<std::string> DeviceNames() {
  std::vector<std::string> out;
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list == nullptr) return out;
  for (int i = 0; i < count; ++i) out.emplace_back(ibv_get_device_name(list[i]));
  ibv_free_device_list(list);
  return out;
}

QueuePair::QueuePair(ibv_qp* qp, uint8_t port, int gid_index, uint32_t local_mtu,
                     uint8_t max_rd_atomic)
    : qp_(qp),
      port_(port),
      gid_index_(gid_index),
      local_mtu_(local_mtu),
      max_rd_atomic_(max_rd_atomic) {}

QueuePair::~QueuePair() { ibv_destroy_qp(qp_); }

absl::Status QueuePair::Connect(const RemoteQp& remote, uint32_t local_psn) {
  ibv_qp_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = port_;
  attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
  if (ibv_modify_qp(qp_, &attr,
                    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) {
    return Errno("QP to INIT");
  }
  std::memset(&attr, 0, sizeof(attr));
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = MtuEnum(std::min(local_mtu_, remote.mtu));
  attr.dest_qp_num = remote.qpn;
  attr.rq_psn = remote.psn;
  attr.max_dest_rd_atomic = max_rd_atomic_;
  attr.min_rnr_timer = 12;
  attr.ah_attr.dlid = remote.lid;
  attr.ah_attr.port_num = port_;
  if (gid_index_ >= 0) {
    attr.ah_attr.is_global = 1;
    std::memcpy(attr.ah_attr.grh.dgid.raw, remote.gid.data(), remote.gid.size());
    attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(gid_index_);
    attr.ah_attr.grh.hop_limit = 255;
  }
  if (ibv_modify_qp(qp_, &attr,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
    return Errno("QP to RTR");
  }
  std::memset(&attr, 0, sizeof(attr));
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = 14;  // 4.096 us * 2^14 = 67 ms per transport retry
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.sq_psn = local_psn;
  attr.max_rd_atomic = max_rd_atomic_;
  if (ibv_modify_qp(qp_, &attr,
                    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
    return Errno("QP to RTS");
  }
  return absl::OkStatus();
}

absl::Status QueuePair::PostRdma(bool write, uint64_t local_addr, uint32_t lkey, uint32_t length,
                                 uint64_t remote_addr, uint32_t rkey, uint64_t wr_id) {
  ibv_sge sge;
  sge.addr = local_addr;
  sge.length = length;
  sge.lkey = lkey;
  ibv_send_wr wr;
  std::memset(&wr, 0, sizeof(wr));
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = remote_addr;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  int rc = ibv_post_send(qp_, &wr, &bad);
  if (rc == ENOMEM) return absl::ResourceExhaustedError("send queue full");
  if (rc != 0) return absl::InternalError(absl::StrCat("ibv_post_send: ", std::strerror(rc)));
  return absl::OkStatus();
}

void QueuePair::MoveToError() {
  ibv_qp_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.qp_state = IBV_QPS_ERR;
  (void)ibv_modify_qp(qp_, &attr, IBV_QP_STATE);
}

absl::StatusOr<std::unique_ptr<Device>> Device::Open(const std::string& name,
                                                     const RdmaConfig& config) {
  std::unique_ptr<Device> device(new Device());
  device->name_ = name;
  device->port_ = config.ib_port;
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list == nullptr) return absl::UnavailableError("ibv_get_device_list failed");
  for (int i = 0; i < count && device->context_ == nullptr; ++i) {
    if (name == ibv_get_device_name(list[i])) device->context_ = ibv_open_device(list[i]);
  }
  ibv_free_device_list(list);
  auto fail = [&](const std::string& what) {
    return absl::UnavailableError(
        absl::StrCat("RDMA device ", name, ": ", what, ": ", std::strerror(errno)));
  };
  if (device->context_ == nullptr) return fail("cannot open");
  ibv_device_attr device_attr;
  if (ibv_query_device(device->context_, &device_attr) != 0) return fail("ibv_query_device");
  ibv_port_attr port_attr;
  if (ibv_query_port(device->context_, config.ib_port, &port_attr) != 0) {
    return fail(absl::StrCat("ibv_query_port ", config.ib_port));
  }
  if (port_attr.state != IBV_PORT_ACTIVE) {
    return absl::UnavailableError(
        absl::StrCat("RDMA device ", name, " port ", config.ib_port, " is not active"));
  }
  device->lid_ = port_attr.lid;
  device->mtu_ = std::min(config.mtu, MtuBytes(port_attr.active_mtu));
  device->max_rd_atomic_ = static_cast<uint8_t>(
      std::clamp(std::min(device_attr.max_qp_rd_atom, device_attr.max_qp_init_rd_atom), 1, 16));
  device->max_cqe_ = std::min<uint32_t>(config.max_cqe, static_cast<uint32_t>(device_attr.max_cqe));
  device->max_qp_wr_ = static_cast<uint32_t>(device_attr.max_qp_wr);
  if (port_attr.link_layer == IBV_LINK_LAYER_ETHERNET) {  // RoCE: addressed by GID
    ibv_gid gid;
    if (ibv_query_gid(device->context_, config.ib_port, config.gid_index, &gid) != 0) {
      return fail(absl::StrCat("ibv_query_gid index ", config.gid_index, " (set MC_GID_INDEX)"));
    }
    std::memcpy(device->gid_.data(), gid.raw, device->gid_.size());
    device->gid_index_ = config.gid_index;
  }
  device->pd_ = ibv_alloc_pd(device->context_);
  if (device->pd_ == nullptr) return fail("ibv_alloc_pd");
  device->cq_ =
      ibv_create_cq(device->context_, static_cast<int>(device->max_cqe_), nullptr, nullptr, 0);
  if (device->cq_ == nullptr) return fail("ibv_create_cq");
  return device;
}

Device::~Device() {
  if (cq_ != nullptr) ibv_destroy_cq(cq_);
  if (pd_ != nullptr) ibv_dealloc_pd(pd_);
  if (context_ != nullptr) ibv_close_device(context_);
}

absl::StatusOr<ibv_mr*> Device::Register(void* addr, size_t length) {
  ibv_mr* mr = ibv_reg_mr(
      pd_, addr, length, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
  if (mr == nullptr) return Errno(absl::StrCat("ibv_reg_mr on ", name_));
  return mr;
}

void Device::Deregister(ibv_mr* mr) {
  if (mr != nullptr) ibv_dereg_mr(mr);
}

absl::StatusOr<std::unique_ptr<QueuePair>> Device::CreateQp(uint32_t max_wr) {
  ibv_qp_init_attr init;
  std::memset(&init, 0, sizeof(init));
  init.send_cq = cq_;
  init.recv_cq = cq_;
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = 0;
  init.cap.max_send_wr = std::min(max_wr, max_qp_wr_);
  init.cap.max_recv_wr = 1;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(pd_, &init);
  if (qp == nullptr) return Errno(absl::StrCat("ibv_create_qp on ", name_));
  return std::make_unique<QueuePair>(qp, port_, gid_index_, mtu_, max_rd_atomic_);
}

absl::Status Device::Poll(int max, std::vector<Completion>& out) {
  ibv_wc wc[16];
  while (max > 0) {
    int n = ibv_poll_cq(cq_, std::min(max, 16), wc);
    if (n < 0) return absl::InternalError(absl::StrCat("ibv_poll_cq on ", name_, " failed"));
    for (int i = 0; i < n; ++i) {
      Completion c;
      c.wr_id = wc[i].wr_id;
      c.ok = wc[i].status == IBV_WC_SUCCESS;
      c.retryable = !c.ok && Retryable(wc[i].status);
      c.flushed = wc[i].status == IBV_WC_WR_FLUSH_ERR;
      if (!c.ok) c.error = ibv_wc_status_str(wc[i].status);
      out.push_back(std::move(c));
    }
    if (n < std::min(max, 16)) break;
    max -= n;
  }
  return absl::OkStatus();
}

}  // namespace yuebing::transport::rdma::verbs
