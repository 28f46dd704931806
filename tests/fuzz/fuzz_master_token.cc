// Fuzzes the master's per-call credential check (metadata of every gRPC call, from anyone who can
// reach the port): any token is refused cleanly with kUnauthenticated unless it is well formed,
// fresh and made with the secret — which a fuzzer cannot forge, so acceptance aborts.
#include <chrono>
#include <cstdint>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "yuebing/common/cluster_auth.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view token(reinterpret_cast<const char*>(data), size);
  const absl::Status status =
      yuebing::VerifyMasterCallToken("fuzzing-secret-0123456789", token,
                                     std::chrono::system_clock::now(), std::chrono::minutes(5));
  if (status.ok() || status.code() != absl::StatusCode::kUnauthenticated) std::abort();
  return 0;
}
