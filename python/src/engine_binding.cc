// TransferEngine: Mooncake's Python transfer engine API over transport::TransferEngine.
//
// Return conventions (Mooncake's): 0 for success and -1 for failure from initialize and the
// synchronous transfers; batch ids from the asynchronous submissions, 0 when nothing was
// submitted; transfer_check_status gives 1 completed, 0 in progress, -1 failed, -2 timed out;
// register_memory gives 0 or a transfer-engine error code (-1 invalid argument, -3 address not
// registered, -7 overlapping registration). Methods called before initialize() fail the same way.
//
// Threading: every method may be called from any thread; transfers and registrations run without
// the GIL. Buffers named in an asynchronous batch must stay valid until its status is final.
#include "engine_binding.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "binding_util.h"
#include "yuebing/common/cluster_auth.h"
#include "yuebing/common/logging.h"
#include "yuebing/common/mutex.h"
#include "yuebing/common/status.h"
#include "yuebing/store/store_config.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::python {
namespace {

namespace py = pybind11;
using transport::BatchId;
using transport::OpCode;
using transport::SegmentHandle;
using transport::TransferEngine;
using transport::TransferRequest;
using transport::TransferState;
using transport::TransferStatus;

// Mooncake transfer-engine error codes (its error.h) used at this edge.
constexpr int kErrInvalidArgument = -1;
constexpr int kErrAddressNotRegistered = -3;
constexpr int kErrAddressOverlapped = -7;
// send_probe gives up on a peer that has not answered its handshake within this time.
constexpr std::chrono::seconds kProbeTimeout{5};
// How long transfer_check_status waits for a final request's batch to become free.
constexpr std::chrono::milliseconds kFinalFreeWait{100};

enum class Opcode { kRead = 0, kWrite = 1 };

struct TransferNotify {
  std::string name;
  std::string msg;
};

int RegistrationCode(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 0;
    case absl::StatusCode::kAlreadyExists:
      return kErrAddressOverlapped;
    case absl::StatusCode::kNotFound:
      return kErrAddressNotRegistered;
    default:
      return kErrInvalidArgument;
  }
}

// Mooncake's connection-string rule: P2PHANDSHAKE and URLs as given, otherwise
// "<metadata_type>://<server>".
std::string ConnString(const std::string& server, const std::string& type) {
  if (server == "P2PHANDSHAKE" || server.find("://") != std::string::npos) return server;
  return absl::StrCat(type.empty() ? "etcd" : type, "://", server);
}

class PyTransferEngine {
 public:
  ~PyTransferEngine() {
    std::shared_ptr<TransferEngine> engine;
    {
      yuebing::MutexLock lock(&mu_);
      engine = std::move(engine_);
    }
    if (engine != nullptr) {
      py::gil_scoped_release release;
      engine.reset();
    }
  }

  int Initialize(const std::string& local_hostname, const std::string& metadata_server,
                 const std::string& protocol, const std::string& device_name) {
    return InitializeExt(local_hostname, metadata_server, protocol, device_name, "etcd");
  }

  int InitializeExt(const std::string& local_hostname, const std::string& metadata_server,
                    const std::string& protocol, const std::string& device_name,
                    const std::string& metadata_type) {
    transport::TransferEngineOptions options;
    options.local_server_name = local_hostname;
    options.metadata_conn = ConnString(metadata_server, metadata_type);
    options.protocol = AsciiLower(absl::StripAsciiWhitespace(protocol));
    if (options.protocol.empty()) options.protocol = "tcp";
    options.rdma_devices = device_name;
    options.enable_shm = store::ShmEnabledByEnvironment();     // YUEBING_ENABLE_SHM
    absl::StatusOr<std::string> secret = LoadClusterSecret();  // $YUEBING_CLUSTER_SECRET[_FILE]
    if (!secret.ok()) {
      YB_LOG_ERROR("yuebing: TransferEngine.initialize: {}", secret.status().ToString());
      return -1;
    }
    options.cluster_secret = *std::move(secret);
    py::gil_scoped_release release;
    yuebing::MutexLock lifecycle(&lifecycle_mu_);
    if (Acquire() != nullptr) {
      YB_LOG_ERROR("yuebing: TransferEngine.initialize() called twice");
      return -1;
    }
    absl::StatusOr<std::unique_ptr<TransferEngine>> engine = TransferEngine::Create(options);
    if (!engine.ok()) {
      YB_LOG_ERROR("yuebing: TransferEngine.initialize failed: {}", engine.status().ToString());
      return -1;
    }
    yuebing::MutexLock lock(&mu_);
    engine_ = std::shared_ptr<TransferEngine>(std::move(engine).value());
    return 0;
  }

  int RpcPort() {
    std::shared_ptr<TransferEngine> engine = Acquire();
    return engine == nullptr ? -1 : engine->RpcPort();
  }

  // Address of the lowest registered buffer `segment_name` publishes; 0 when the segment cannot
  // be reached or has none (upstream's convention). Upstream counts in registration order;
  // segments here list their buffers by address, which is the same for the usual one buffer.
  uintptr_t FirstBufferAddress(const std::string& segment_name) {
    std::shared_ptr<TransferEngine> engine = Acquire();
    if (engine == nullptr) return 0;
    py::gil_scoped_release release;
    absl::StatusOr<std::vector<TransferEngine::SegmentBuffer>> buffers =
        engine->ListSegmentBuffers(segment_name);
    return buffers.ok() && !buffers->empty() ? static_cast<uintptr_t>(buffers->front().addr) : 0;
  }

  std::string SessionId() {
    std::shared_ptr<TransferEngine> engine = Acquire();
    return engine == nullptr ? std::string() : engine->LocalSegmentName();
  }

  uintptr_t AllocateManagedBuffer(uint64_t length) {
    std::shared_ptr<TransferEngine> engine = Acquire();
    if (engine == nullptr || length == 0) return 0;
    py::gil_scoped_release release;
    absl::StatusOr<void*> memory = engine->AllocateSharedMemory(length);
    return memory.ok() ? reinterpret_cast<uintptr_t>(*memory) : 0;
  }

  int FreeManagedBuffer(uintptr_t address, uint64_t /*length*/) {
    std::shared_ptr<TransferEngine> engine = Acquire();
    if (engine == nullptr) return -1;
    py::gil_scoped_release release;
    return engine->FreeSharedMemory(AddressOf(address)).ok() ? 0 : -1;
  }

  int RegisterMemory(uintptr_t address, uint64_t capacity, const std::string& location) {
    std::shared_ptr<TransferEngine> engine = Acquire();
    if (engine == nullptr) return kErrInvalidArgument;
    py::gil_scoped_release release;
    return RegistrationCode(
        engine->RegisterLocalMemory(AddressOf(address), capacity, Location(location)));
  }

  int UnregisterMemory(uintptr_t address) {
    std::shared_ptr<TransferEngine> engine = Acquire();
    if (engine == nullptr) return kErrInvalidArgument;
    py::gil_scoped_release release;
    return RegistrationCode(engine->UnregisterLocalMemory(AddressOf(address)));
  }

  // All or nothing: on a failure the buffers registered by this call are unregistered again.
  int BatchRegisterMemory(const std::vector<uintptr_t>& addresses,
                          const std::vector<uint64_t>& capacities, const std::string& location) {
    std::shared_ptr<TransferEngine> engine = Acquire();
    if (engine == nullptr || addresses.size() != capacities.size()) return kErrInvalidArgument;
    py::gil_scoped_release release;
    for (size_t i = 0; i < addresses.size(); ++i) {
      absl::Status status =
          engine->RegisterLocalMemory(AddressOf(addresses[i]), capacities[i], Location(location));
      if (!status.ok()) {
        for (size_t j = 0; j < i; ++j) (void)engine->UnregisterLocalMemory(AddressOf(addresses[j]));
        return RegistrationCode(status);
      }
    }
    return 0;
  }

  int BatchUnregisterMemory(const std::vector<uintptr_t>& addresses) {
    std::shared_ptr<TransferEngine> engine = Acquire();
    if (engine == nullptr) return kErrInvalidArgument;
    py::gil_scoped_release release;
    int code = 0;
    for (uintptr_t address : addresses) {
      int rc = RegistrationCode(engine->UnregisterLocalMemory(AddressOf(address)));
      if (code == 0) code = rc;
    }
    return code;
  }

  int TransferSync(const std::string& target, uintptr_t buffer, uintptr_t peer_address,
                   uint64_t length, Opcode opcode, const TransferNotify* notify) {
    return BatchTransferSync(target, {buffer}, {peer_address}, {length}, opcode, notify);
  }

  int BatchTransferSync(const std::string& target, const std::vector<uintptr_t>& buffers,
                        const std::vector<uintptr_t>& peer_addresses,
                        const std::vector<uint64_t>& lengths, Opcode opcode,
                        const TransferNotify* notify) {
    WarnIfNotify(notify);
    std::shared_ptr<TransferEngine> engine = Acquire();
    if (engine == nullptr) return -1;
    py::gil_scoped_release release;
    if (buffers.size() != peer_addresses.size() || buffers.size() != lengths.size()) return -1;
    if (buffers.empty()) return 0;
    absl::StatusOr<BatchId> batch =
        Submit(*engine, target, buffers, peer_addresses, lengths, opcode);
    if (!batch.ok()) {
      YB_LOG_WARN("yuebing: transfer to {} not submitted: {}", target, batch.status().ToString());
      return -1;
    }
    bool completed = WaitAndFree(*engine, *batch);
    engine.reset();
    return completed ? 0 : -1;
  }

  BatchId BatchTransferAsync(const std::string& target, const std::vector<uintptr_t>& buffers,
                             const std::vector<uintptr_t>& peer_addresses,
                             const std::vector<uint64_t>& lengths, Opcode opcode) {
    std::shared_ptr<TransferEngine> engine = Acquire();
    if (engine == nullptr) return 0;
    py::gil_scoped_release release;
    if (buffers.empty() || buffers.size() != peer_addresses.size() ||
        buffers.size() != lengths.size()) {
      return 0;
    }
    absl::StatusOr<BatchId> batch =
        Submit(*engine, target, buffers, peer_addresses, lengths, opcode);
    if (!batch.ok()) {
      YB_LOG_WARN("yuebing: transfer to {} not submitted: {}", target, batch.status().ToString());
      return 0;
    }
    engine.reset();
    return *batch;
  }

  // Waits until every listed batch is final and frees them; 0 when all requests completed.
  int GetBatchTransferStatus(const std::vector<BatchId>& batch_ids) {
    std::shared_ptr<TransferEngine> engine = Acquire();
    if (engine == nullptr) return -1;
    py::gil_scoped_release release;
    bool all_completed = true;
    for (BatchId id : batch_ids) all_completed = WaitAndFree(*engine, id) && all_completed;
    engine.reset();
    return all_completed ? 0 : -1;
  }

  int TransferCheckStatus(BatchId batch) {
    std::shared_ptr<TransferEngine> engine = Acquire();
    if (engine == nullptr) return -1;
    py::gil_scoped_release release;
    absl::StatusOr<TransferStatus> status = engine->GetTransferStatus(batch, 0);
    if (!status.ok()) return -1;
    switch (status->state) {
      case TransferState::kCompleted:
        FreeFinal(*engine, batch);
        return 1;
      case TransferState::kFailed:
        FreeFinal(*engine, batch);
        return -1;
      case TransferState::kTimeout:
        FreeFinal(*engine, batch);
        return -2;
      default:
        return 0;
    }
  }

  // Frees a batch whose (first) request reads final. The batch counts that request as in flight
  // until a moment after its status turned final, so a refused free waits for that, briefly
  // (a batch with other requests still running stays; its id stays valid).
  static void FreeFinal(TransferEngine& engine, BatchId batch) {
    if (engine.FreeBatch(batch).ok()) return;
    (void)engine.WaitBatch(batch, kFinalFreeWait);
    (void)engine.FreeBatch(batch);
  }

  int SendProbe(const std::string& peer) {
    std::shared_ptr<TransferEngine> engine = Acquire();
    if (engine == nullptr) return -1;
    py::gil_scoped_release release;
    // A fresh connection and handshake: a peer that died after its handle was cached fails.
    return engine->Probe(peer, std::chrono::steady_clock::now() + kProbeTimeout).ok() ? 0 : -1;
  }

  uintptr_t EnginePtr() {
    std::shared_ptr<TransferEngine> engine = Acquire();
    return reinterpret_cast<uintptr_t>(engine.get());
  }

 private:
  std::shared_ptr<TransferEngine> Acquire() {
    yuebing::MutexLock lock(&mu_);
    return engine_;
  }

  static std::string Location(const std::string& location) {
    return location.empty() || location == "*" ? std::string("cpu:0") : location;
  }

  static void WarnIfNotify(const TransferNotify* notify) {
    static std::atomic<bool> warned{false};
    if (notify != nullptr && !warned.exchange(true)) {
      YB_LOG_WARN("yuebing: transfer notifications are not supported; notify is ignored");
    }
  }

  // Opens the target (reopening it once if the peer restarted since it was opened) and submits
  // the requests as one batch. Nothing is submitted on an error.
  static absl::StatusOr<BatchId> Submit(TransferEngine& engine, const std::string& target,
                                        const std::vector<uintptr_t>& buffers,
                                        const std::vector<uintptr_t>& peer_addresses,
                                        const std::vector<uint64_t>& lengths, Opcode opcode) {
    YB_ASSIGN_OR_RETURN(SegmentHandle handle, engine.OpenSegment(target));
    std::vector<TransferRequest> requests(buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
      requests[i].opcode = opcode == Opcode::kRead ? OpCode::kRead : OpCode::kWrite;
      requests[i].source = AddressOf(buffers[i]);
      requests[i].target_id = handle;
      requests[i].target_offset = peer_addresses[i];
      requests[i].length = lengths[i];
    }
    YB_ASSIGN_OR_RETURN(BatchId batch, engine.AllocateBatch(requests.size()));
    absl::Status status = engine.SubmitTransfer(batch, requests);
    if (status.code() == absl::StatusCode::kFailedPrecondition) {
      // The peer restarted: reach its new incarnation through a fresh handle.
      (void)engine.CloseSegment(handle);
      absl::StatusOr<SegmentHandle> reopened = engine.OpenSegment(target);
      if (reopened.ok()) {
        for (TransferRequest& r : requests) r.target_id = *reopened;
        status = engine.SubmitTransfer(batch, requests);
      } else {
        status = reopened.status();
      }
    }
    if (!status.ok()) {
      (void)engine.FreeBatch(batch);
      return status;
    }
    return batch;
  }

  // Waits until every request of the batch is final, bounded by the batch's deadlines plus
  // kFinalWaitMargin (TransferEngine::WaitAndFreeBatch), frees the batch and tells whether all
  // completed. False for an unknown batch or any request not completed in time.
  static bool WaitAndFree(TransferEngine& engine, BatchId batch) {
    absl::StatusOr<std::vector<TransferStatus>> statuses = engine.WaitAndFreeBatch(batch);
    if (!statuses.ok()) return false;
    return std::all_of(statuses->begin(), statuses->end(), [](const TransferStatus& s) {
      return s.state == TransferState::kCompleted;
    });
  }

  yuebing::Mutex lifecycle_mu_;  // serializes initialize(); never taken with the GIL held
  yuebing::Mutex mu_;
  std::shared_ptr<TransferEngine> engine_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

void BindEngine(py::module_& m) {
  for (const char* flag : {"SUPPORT_EFA", "SUPPORT_HIP", "SUPPORT_MNNVL", "SUPPORT_MUSA",
                           "SUPPORT_INTRA_NVLINK", "SUPPORT_CUDA"}) {
    m.attr(flag) = false;
  }
  py::enum_<Opcode> opcode(m, "TransferOpcode", py::arithmetic());
  opcode.value("Read", Opcode::kRead).value("Write", Opcode::kWrite).export_values();

  py::class_<TransferNotify>(m, "TransferNotify")
      .def(py::init<>())
      .def(py::init([](const std::string& name, const std::string& msg) {
             return TransferNotify{name, msg};
           }),
           py::arg("name"), py::arg("msg"))
      .def_readwrite("name", &TransferNotify::name)
      .def_readwrite("msg", &TransferNotify::msg);

  using E = PyTransferEngine;
  const std::string kAnyLocation = "*";
  py::class_<E> engine(m, "TransferEngine");
  engine.def(py::init<>())
      .def("initialize", &E::Initialize, py::arg("local_hostname"), py::arg("metadata_server"),
           py::arg("protocol"), py::arg("device_name"))
      .def("initialize_ext", &E::InitializeExt, py::arg("local_hostname"),
           py::arg("metadata_server"), py::arg("protocol"), py::arg("device_name"),
           py::arg("metadata_type"))
      .def("get_rpc_port", &E::RpcPort)
      .def("get_first_buffer_address", &E::FirstBufferAddress, py::arg("segment_name"))
      .def("get_session_id", &E::SessionId, "This engine's segment name, \"host:port\".")
      .def("get_hostname", &E::SessionId, "This engine's segment name, \"host:port\".")
      .def("allocate_managed_buffer", &E::AllocateManagedBuffer, py::arg("length"))
      .def("free_managed_buffer", &E::FreeManagedBuffer, py::arg("buffer_addr"), py::arg("length"))
      .def(
          "transfer_sync_write",
          [](E& self, const std::string& target, uintptr_t buffer, uintptr_t peer, uint64_t length,
             const std::string&) {
            return self.TransferSync(target, buffer, peer, length, Opcode::kWrite, nullptr);
          },
          py::arg("target_hostname"), py::arg("buffer"), py::arg("peer_buffer_address"),
          py::arg("length"), py::arg("transport_hint") = "")
      .def(
          "transfer_sync_read",
          [](E& self, const std::string& target, uintptr_t buffer, uintptr_t peer, uint64_t length,
             const std::string&) {
            return self.TransferSync(target, buffer, peer, length, Opcode::kRead, nullptr);
          },
          py::arg("target_hostname"), py::arg("buffer"), py::arg("peer_buffer_address"),
          py::arg("length"), py::arg("transport_hint") = "")
      .def(
          "transfer_sync",
          [](E& self, const std::string& target, uintptr_t buffer, uintptr_t peer, uint64_t length,
             Opcode op, const TransferNotify* notify, const std::string&) {
            return self.TransferSync(target, buffer, peer, length, op, notify);
          },
          py::arg("target_hostname"), py::arg("buffer"), py::arg("peer_buffer_address"),
          py::arg("length"), py::arg("opcode"), py::arg("notify") = nullptr,
          py::arg("transport_hint") = "")
      .def(
          "batch_transfer_sync_write",
          [](E& self, const std::string& target, const std::vector<uintptr_t>& buffers,
             const std::vector<uintptr_t>& peers, const std::vector<uint64_t>& lengths,
             const std::string&) {
            return self.BatchTransferSync(target, buffers, peers, lengths, Opcode::kWrite, nullptr);
          },
          py::arg("target_hostname"), py::arg("buffers"), py::arg("peer_buffer_addresses"),
          py::arg("lengths"), py::arg("transport_hint") = "")
      .def(
          "batch_transfer_sync_read",
          [](E& self, const std::string& target, const std::vector<uintptr_t>& buffers,
             const std::vector<uintptr_t>& peers, const std::vector<uint64_t>& lengths,
             const std::string&) {
            return self.BatchTransferSync(target, buffers, peers, lengths, Opcode::kRead, nullptr);
          },
          py::arg("target_hostname"), py::arg("buffers"), py::arg("peer_buffer_addresses"),
          py::arg("lengths"), py::arg("transport_hint") = "")
      .def(
          "batch_transfer_sync",
          [](E& self, const std::string& target, const std::vector<uintptr_t>& buffers,
             const std::vector<uintptr_t>& peers, const std::vector<uint64_t>& lengths, Opcode op,
             const TransferNotify* notify, const std::string&) {
            return self.BatchTransferSync(target, buffers, peers, lengths, op, notify);
          },
          py::arg("target_hostname"), py::arg("buffers"), py::arg("peer_buffer_addresses"),
          py::arg("lengths"), py::arg("opcode"), py::arg("notify") = nullptr,
          py::arg("transport_hint") = "")
      .def(
          "batch_transfer_async_write",
          [](E& self, const std::string& target, const std::vector<uintptr_t>& buffers,
             const std::vector<uintptr_t>& peers, const std::vector<uint64_t>& lengths,
             const std::string&) {
            return self.BatchTransferAsync(target, buffers, peers, lengths, Opcode::kWrite);
          },
          py::arg("target_hostname"), py::arg("buffers"), py::arg("peer_buffer_addresses"),
          py::arg("lengths"), py::arg("transport_hint") = "")
      .def(
          "batch_transfer_async_read",
          [](E& self, const std::string& target, const std::vector<uintptr_t>& buffers,
             const std::vector<uintptr_t>& peers, const std::vector<uint64_t>& lengths,
             const std::string&) {
            return self.BatchTransferAsync(target, buffers, peers, lengths, Opcode::kRead);
          },
          py::arg("target_hostname"), py::arg("buffers"), py::arg("peer_buffer_addresses"),
          py::arg("lengths"), py::arg("transport_hint") = "")
      .def(
          "batch_transfer_async",
          [](E& self, const std::string& target, const std::vector<uintptr_t>& buffers,
             const std::vector<uintptr_t>& peers, const std::vector<uint64_t>& lengths, Opcode op,
             const std::string&) {
            return self.BatchTransferAsync(target, buffers, peers, lengths, op);
          },
          py::arg("target_hostname"), py::arg("buffers"), py::arg("peer_buffer_addresses"),
          py::arg("lengths"), py::arg("opcode"), py::arg("transport_hint") = "")
      .def("get_batch_transfer_status", &E::GetBatchTransferStatus, py::arg("batch_ids"))
      .def(
          "transfer_submit_write",
          [](E& self, const std::string& target, uintptr_t buffer, uintptr_t peer, uint64_t length,
             const std::string&) {
            return self.BatchTransferAsync(target, {buffer}, {peer}, {length}, Opcode::kWrite);
          },
          py::arg("target_hostname"), py::arg("buffer"), py::arg("peer_buffer_address"),
          py::arg("length"), py::arg("transport_hint") = "")
      .def("transfer_check_status", &E::TransferCheckStatus, py::arg("batch_id"))
      .def(
          "write_bytes_to_buffer",
          [](E&, uintptr_t dest, py::handle src, uint64_t length) {
            ByteView view(src);
            if (dest == 0 || length > view.view().size()) return -1;
            std::memcpy(AddressOf(dest), view.view().data(), length);
            return 0;
          },
          py::arg("dest_address"), py::arg("src_ptr"), py::arg("length"))
      .def(
          "read_bytes_from_buffer",
          [](E&, uintptr_t source, uint64_t length) {
            if (source == 0 || length == 0) return py::bytes();
            return py::bytes(static_cast<const char*>(AddressOf(source)), length);
          },
          py::arg("source_address"), py::arg("length"))
      .def("register_memory", &E::RegisterMemory, py::arg("buffer_addr"), py::arg("capacity"),
           py::arg("location") = kAnyLocation)
      .def("unregister_memory", &E::UnregisterMemory, py::arg("buffer_addr"))
      .def("batch_register_memory", &E::BatchRegisterMemory, py::arg("buffer_addresses"),
           py::arg("capacities"), py::arg("location") = kAnyLocation)
      .def("batch_unregister_memory", &E::BatchUnregisterMemory, py::arg("buffer_addresses"))
      .def(
          "get_local_topology", [](E&, py::object) { return std::string("{\"cpu:0\": [[], []]}"); },
          py::arg("device_name") = py::none(),
          "No RDMA devices are used by this build; reports the CPU location only.")
      .def("get_notifies", [](E&) { return std::vector<TransferNotify>(); })
      .def("send_probe", &E::SendProbe, py::arg("peer_server_name"))
      .def(
          "get_engine", [](py::object self) { return self; },
          "The engine itself (what Mooncake's setup(engine=...) expects).")
      .def("get_engine_ptr", &E::EnginePtr);
  engine.attr("TransferOpcode") = opcode;
}

}  // namespace yuebing::python
