// A small key-value server over HTTP, the metadata service of the transfer engine (compatible with
// Mooncake's http metadata server): GET /metadata?key=K returns the value (200) or 404;
// PUT /metadata?key=K stores the request body; DELETE /metadata?key=K removes it (200, or 404
// when absent). GET /health returns "OK". Runs embedded (the master) or standalone
// (yuebing-metadata-server).
//
// Limits: keys up to 4 KiB, values up to kMaxValueBytes, at most kMaxKeys keys; over a limit the
// request gets 413 (value too large) or 507 (too many keys) and nothing stored changes.
// Thread safety: all methods are thread-safe; requests are served on the server's own threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace yuebing {

class HttpMetadataServer {
 public:
  static constexpr size_t kMaxKeyBytes = 4096;
  static constexpr size_t kMaxValueBytes = 16u << 20;
  static constexpr size_t kMaxKeys = 1u << 20;

  // Binds host:port (port 0 picks a free one) and starts serving before returning.
  // Errors: kUnavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpMetadataServer>> Start(const std::string& host,
                                                                   uint16_t port);
  virtual ~HttpMetadataServer() = default;  // stops serving and joins its threads

  virtual uint16_t port() const = 0;
  virtual size_t KeyCount() const = 0;
};

}  // namespace yuebing
