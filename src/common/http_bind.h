// Binding a cpp-httplib server to exactly one port. The library's default socket options include
// SO_REUSEPORT, which lets a second server bind the same port and silently take half of the
// requests; servers bound here set SO_REUSEADDR only, so a taken port is an error.
#pragma once

#include <httplib.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace yuebing {

// Binds `server` to host:port (0 picks a free port) and returns the bound port; the caller then
// runs server.listen_after_bind(). Errors: kUnavailable (address in use or not bindable).
absl::StatusOr<uint16_t> BindHttpServer(httplib::Server& server, const std::string& host,
                                        uint16_t port);

}  // namespace yuebing
