#include "common/http_bind.h"

#include <sys/socket.h>

#include "absl/strings/str_cat.h"

namespace yuebing {

absl::StatusOr<uint16_t> BindHttpServer(httplib::Server& server, const std::string& host,
                                        uint16_t port) {
  // Without TCP_NODELAY the body, sent after the headers, waits ~40 ms for a delayed ACK.
  server.set_tcp_nodelay(true);
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  if (port == 0) {
    const int bound = server.bind_to_any_port(host);
    if (bound <= 0) return absl::UnavailableError(absl::StrCat("cannot bind ", host, ":0"));
    return static_cast<uint16_t>(bound);
  }
  if (!server.bind_to_port(host, port)) {
    return absl::UnavailableError(
        absl::StrCat("cannot bind ", host, ":", port, " (address in use?)"));
  }
  return port;
}

}  // namespace yuebing
