// Transfer engine benchmark, modelled on Mooncake's transfer_engine_bench:
//   target:    registers one buffer (plain memory for --protocol=tcp, engine-allocated shared
//              memory for --protocol=shm), prints "READY <segment> <addr> <len>" and serves.
//   initiator: opens the target segment; each thread loops {allocate batch, submit batch_size
//              requests of block_size to distinct offsets of its own slice of the remote buffer,
//              WaitBatch, free batch} for --duration and records the latency of each batch.
// Two untimed warm-up batches per thread (connection set-up, first faults) precede the timed
// phase, which all threads start together.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "bench_buffer.h"
#include "bench_flags.h"
#include "latency_stats.h"
#include "report.h"
#include "subcommands.h"
#include "transfer_verify.h"
#include "yuebing/common/config.h"
#include "yuebing/common/mutex.h"
#include "yuebing/common/status.h"
#include "yuebing/transport/transfer_engine.h"

namespace yuebing::bench {
namespace {

using transport::BatchId;
using transport::OpCode;
using transport::SegmentHandle;
using transport::TransferEngine;
using transport::TransferEngineOptions;
using transport::TransferRequest;

constexpr int kWarmupBatches = 2;
constexpr int32_t kMaxThreads = 256;
constexpr int32_t kMaxBatch = 65536;

volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void OnStopSignal(int) { g_stop_signal = 1; }

struct Params {
  bool json = false;
  bool shm = false;
  OpCode opcode = OpCode::kRead;
  uint64_t block = 0;
  uint32_t batch = 0;
  uint32_t threads = 0;
  std::chrono::milliseconds timeout{0};
};

absl::StatusOr<Params> ReadParams() {
  Params p;
  YB_ASSIGN_OR_RETURN(p.json, ReportJson());
  const std::string protocol = absl::GetFlag(FLAGS_protocol);
  if (protocol != "tcp" && protocol != "shm") {
    return absl::InvalidArgumentError("--protocol must be tcp or shm");
  }
  p.shm = protocol == "shm";
  const std::string operation = absl::GetFlag(FLAGS_operation);
  if (operation != "read" && operation != "write") {
    return absl::InvalidArgumentError("--operation must be read or write");
  }
  p.opcode = operation == "read" ? OpCode::kRead : OpCode::kWrite;
  YB_ASSIGN_OR_RETURN(p.block, BlockSizeFlag());
  const int32_t batch = absl::GetFlag(FLAGS_batch_size);
  const int32_t threads = absl::GetFlag(FLAGS_threads);
  if (batch < 1 || batch > kMaxBatch) return absl::InvalidArgumentError("--batch_size: 1..65536");
  if (threads < 1 || threads > kMaxThreads) return absl::InvalidArgumentError("--threads: 1..256");
  p.batch = static_cast<uint32_t>(batch);
  p.threads = static_cast<uint32_t>(threads);
  const int32_t timeout_ms = absl::GetFlag(FLAGS_timeout_ms);
  if (timeout_ms < 1) return absl::InvalidArgumentError("--timeout_ms must be > 0");
  p.timeout = std::chrono::milliseconds(timeout_ms);
  return p;
}

absl::StatusOr<std::unique_ptr<TransferEngine>> MakeEngine(const Params& p,
                                                           const std::string& name) {
  TransferEngineOptions options;
  options.metadata_conn = absl::GetFlag(FLAGS_metadata_server);
  options.local_server_name = name;
  options.protocol = "tcp";
  options.enable_shm = p.shm;
  options.request_timeout = p.timeout;
  if (int32_t n = absl::GetFlag(FLAGS_tcp_connections_per_peer); n > 0) {
    options.tcp_connections_per_peer = static_cast<uint32_t>(n);
  }
  if (std::string slice = absl::GetFlag(FLAGS_tcp_slice_size); !slice.empty()) {
    YB_ASSIGN_OR_RETURN(options.tcp_slice_bytes, ParseSize(slice));
  }
  return TransferEngine::Create(options);
}

// ---- target ----

absl::Status RunTarget(const Params& p) {
  std::string name = absl::GetFlag(FLAGS_local_server_name);
  if (name.empty()) name = absl::StrCat("127.0.0.1:", absl::GetFlag(FLAGS_port));
  YB_ASSIGN_OR_RETURN(const uint64_t size, BufferSizeFlag(p.block));
  std::signal(SIGINT, OnStopSignal);
  std::signal(SIGTERM, OnStopSignal);

  std::unique_ptr<MappedBuffer> plain;  // declared before the engine: destroyed after it
  YB_ASSIGN_OR_RETURN(std::unique_ptr<TransferEngine> engine, MakeEngine(p, name));
  char* base = nullptr;
  if (p.shm) {
    YB_ASSIGN_OR_RETURN(void* addr, engine->AllocateSharedMemory(size));
    base = static_cast<char*>(addr);
    std::memset(base, 0x3c, size);
  } else {
    YB_ASSIGN_OR_RETURN(MappedBuffer buffer, MappedBuffer::Create(size, 0x3c));
    plain = std::make_unique<MappedBuffer>(std::move(buffer));
    base = plain->data();
    YB_RETURN_IF_ERROR(engine->RegisterLocalMemory(base, size));
  }
  std::printf("READY %s %p %llu\n", engine->LocalSegmentName().c_str(), static_cast<void*>(base),
              static_cast<unsigned long long>(size));
  std::fflush(stdout);

  const int32_t duration_s = DurationSeconds(-1);
  const uint64_t end =
      duration_s < 0 ? UINT64_MAX : NowNanos() + static_cast<uint64_t>(duration_s) * 1'000'000'000;
  while (g_stop_signal == 0 && NowNanos() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  absl::Status status =
      p.shm ? engine->FreeSharedMemory(base) : engine->UnregisterLocalMemory(base);
  engine.reset();
  std::fprintf(stderr, "target: stopped (%s)\n", g_stop_signal ? "signal" : "duration");
  return status;
}

// ---- initiator ----

struct RunState {
  TransferEngine* engine = nullptr;
  SegmentHandle segment = -1;
  const Params* params = nullptr;
  char* local = nullptr;  // this process's registered buffer
  uint64_t remote = 0;    // target buffer address
  uint64_t slice = 0;     // bytes per thread, a multiple of block
  uint64_t end_ns = 0;    // timed phase end, set before the start barrier opens

  yuebing::Mutex mu;
  absl::Status error ABSL_GUARDED_BY(mu);
  std::atomic<bool> failed{false};

  void Fail(absl::Status status) {
    yuebing::MutexLock lock(&mu);
    if (error.ok()) error = std::move(status);
    failed.store(true);
  }
};

// Runs one batch: requests for slots [first, first+count) of `thread`'s slice, modulo its size.
absl::Status RunBatch(RunState& s, uint32_t thread, OpCode opcode, uint64_t first, uint32_t count,
                      std::vector<TransferRequest>& requests) {
  const uint64_t block = s.params->block;
  const uint64_t slots = s.slice / block;
  const uint64_t base = static_cast<uint64_t>(thread) * s.slice;
  requests.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t offset = base + (first + i) % slots * block;
    requests[i] = TransferRequest{opcode, s.local + offset, s.segment, s.remote + offset, block};
  }
  YB_ASSIGN_OR_RETURN(BatchId batch, s.engine->AllocateBatch(count));
  absl::Status submitted = s.engine->SubmitTransfer(batch, requests);
  if (!submitted.ok()) {
    (void)s.engine->FreeBatch(batch);
    return submitted;
  }
  // The engine ends each request by its own deadline (timeout); wait a little longer than that.
  YB_ASSIGN_OR_RETURN(std::vector<transport::TransferStatus> statuses,
                      s.engine->WaitBatch(batch, s.params->timeout + std::chrono::seconds(2)));
  for (size_t i = 0; i < statuses.size(); ++i) {
    const transport::TransferState state = statuses[i].state;
    if (state != transport::TransferState::kCompleted) {
      std::string message = absl::StrCat(
          "request ", i, " ended ", transport::TransferStateName(state), ": ", statuses[i].reason);
      return state == transport::TransferState::kFailed ? absl::AbortedError(message)
                                                        : absl::DeadlineExceededError(message);
    }
  }
  return s.engine->FreeBatch(batch);
}

struct ThreadResult {
  LatencyRecorder latency;
  uint64_t bytes = 0;
  uint64_t requests = 0;
  uint64_t finish_ns = 0;
  std::string verify_failure;  // empty: verification passed or did not run
};

template <typename Barrier>
void Worker(RunState& s, uint32_t thread, Barrier& start, ThreadResult& out) {
  const Params& p = *s.params;
  const uint64_t slots = s.slice / p.block;
  std::vector<TransferRequest> requests;
  uint64_t cursor = 0;
  for (int i = 0; i < kWarmupBatches && !s.failed.load(); ++i) {
    if (absl::Status st = RunBatch(s, thread, p.opcode, cursor, p.batch, requests); !st.ok()) {
      s.Fail(st);
    }
    cursor = (cursor + p.batch) % slots;
  }
  start.arrive_and_wait();
  while (!s.failed.load() && NowNanos() < s.end_ns) {
    const uint64_t t0 = NowNanos();
    if (absl::Status st = RunBatch(s, thread, p.opcode, cursor, p.batch, requests); !st.ok()) {
      s.Fail(st);
      break;
    }
    out.latency.Record(NowNanos() - t0);
    out.bytes += p.batch * p.block;
    out.requests += p.batch;
    cursor = (cursor + p.batch) % slots;
  }
  out.finish_ns = NowNanos();
  if (absl::GetFlag(FLAGS_verify) && !s.failed.load()) {
    VerifyTarget target{s.local + thread * s.slice, slots, p.block, p.batch,
                        static_cast<uint64_t>(NowNanos()) ^ (uint64_t{thread} << 56)};
    auto run = [&](OpCode opcode, uint64_t first, uint32_t count) {
      return RunBatch(s, thread, opcode, first, count, requests);
    };
    absl::StatusOr<std::string> verdict = VerifyRoundTrip(target, run);
    if (!verdict.ok()) {
      s.Fail(verdict.status());
    } else if (!verdict->empty()) {
      out.verify_failure = absl::StrCat("thread ", thread, ": ", *verdict);
    }
  }
}

absl::StatusOr<uint64_t> ParseAddress(const std::string& text) {
  if (text.empty()) {
    return absl::InvalidArgumentError("initiator needs --target_buffer=<addr> (target's READY)");
  }
  char* end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text.c_str(), &end, 0);
  if (errno != 0 || end == text.c_str() || *end != '\0' || value == 0) {
    return absl::InvalidArgumentError(absl::StrCat("bad --target_buffer: ", text));
  }
  return static_cast<uint64_t>(value);
}

absl::Status RunInitiator(const Params& p) {
  YB_ASSIGN_OR_RETURN(const uint64_t remote, ParseAddress(absl::GetFlag(FLAGS_target_buffer)));
  const uint64_t min_bytes = uint64_t{p.threads} * p.batch * p.block;
  YB_ASSIGN_OR_RETURN(const uint64_t size, BufferSizeFlag(min_bytes));
  uint64_t usable = size;
  if (std::string text = absl::GetFlag(FLAGS_target_buffer_size); !text.empty()) {
    YB_ASSIGN_OR_RETURN(const uint64_t remote_size, ParseSize(text));
    if (remote_size < min_bytes) {
      return absl::InvalidArgumentError("--target_buffer_size below threads*batch*block");
    }
    usable = std::min(usable, remote_size);
  }
  std::string name = absl::GetFlag(FLAGS_local_server_name);
  if (name.empty()) name = "127.0.0.1";

  YB_ASSIGN_OR_RETURN(MappedBuffer local, MappedBuffer::Create(size, 0x6b));
  YB_ASSIGN_OR_RETURN(std::unique_ptr<TransferEngine> engine, MakeEngine(p, name));
  YB_RETURN_IF_ERROR(engine->RegisterLocalMemory(local.data(), local.size()));
  YB_ASSIGN_OR_RETURN(SegmentHandle segment, engine->OpenSegment(absl::GetFlag(FLAGS_segment_id)));

  RunState s;
  s.engine = engine.get();
  s.segment = segment;
  s.params = &p;
  s.local = local.data();
  s.remote = remote;
  s.slice = usable / p.threads / p.block * p.block;
  const int32_t duration_s = DurationSeconds(10);

  std::vector<ThreadResult> results(p.threads);
  uint64_t start_ns = 0;
  std::barrier start(static_cast<std::ptrdiff_t>(p.threads), [&]() noexcept {
    start_ns = NowNanos();
    s.end_ns = start_ns + static_cast<uint64_t>(duration_s) * 1'000'000'000ull;
  });
  {
    std::vector<std::jthread> workers;
    for (uint32_t t = 0; t < p.threads; ++t) {
      workers.emplace_back([&, t] { Worker(s, t, start, results[t]); });
    }
  }
  {
    yuebing::MutexLock lock(&s.mu);
    if (!s.error.ok()) {
      local.Leak();  // a timed-out request may still reference it
      return s.error;
    }
  }

  LatencyRecorder latency;
  uint64_t bytes = 0, requests = 0, finish_ns = start_ns;
  std::string verify = absl::GetFlag(FLAGS_verify) ? "passed" : "skipped";
  std::string verify_failure;
  for (const ThreadResult& r : results) {
    latency.Merge(r.latency);
    bytes += r.bytes;
    requests += r.requests;
    finish_ns = std::max(finish_ns, r.finish_ns);
    if (!r.verify_failure.empty()) {
      verify = "failed";
      verify_failure = r.verify_failure;
    }
  }
  const double seconds = static_cast<double>(finish_ns - start_ns) / 1e9;
  const LatencySummary summary = latency.Summarize();

  Report report;
  report.Add("test", "transfer");
  report.Add("protocol", absl::GetFlag(FLAGS_protocol));
  report.Add("operation", absl::GetFlag(FLAGS_operation));
  report.Add("block_size", p.block);
  report.Add("batch_size", uint64_t{p.batch});
  report.Add("threads", uint64_t{p.threads});
  report.Add("seconds", seconds);
  report.Add("bytes", bytes);
  report.Add("gbps", seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0);
  report.Add("ops_per_s", seconds > 0 ? static_cast<double>(requests) / seconds : 0.0);
  report.Add("batches_per_s", seconds > 0 ? static_cast<double>(summary.count) / seconds : 0.0);
  report.AddLatency("batch", summary);
  report.Add("verify", verify);
  // Which paths carried the bytes (whole run: warm-up, timed phase and verification), so a
  // script can tell an shm run that fell back to TCP.
  const transport::TransferEngineStats paths = engine->Stats();
  report.Add("path_shm_bytes", paths.shm_bytes);
  report.Add("path_tcp_bytes", paths.tcp_bytes);
  report.Add("path_local_bytes", paths.local_bytes);
  report.Print(p.json);

  YB_RETURN_IF_ERROR(engine->UnregisterLocalMemory(local.data()));
  if (!verify_failure.empty()) return absl::DataLossError(verify_failure);
  return absl::OkStatus();
}

}  // namespace

absl::Status RunTransferBench() {
  YB_ASSIGN_OR_RETURN(const Params p, ReadParams());
  std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode.empty()) mode = "initiator";
  if (mode == "target") return RunTarget(p);
  if (mode == "initiator") return RunInitiator(p);
  return absl::InvalidArgumentError("transfer needs --mode=target or --mode=initiator");
}

}  // namespace yuebing::bench
