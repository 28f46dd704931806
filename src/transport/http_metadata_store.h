// The HTTP metadata backend ("http://host:port/path"). Private to src/transport; callers use
// CreateMetadataStore.
#pragma once

#include <chrono>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "transport/metadata_store.h"

namespace yuebing::transport {

// Creates the store for `address`, the part of "http://host[:port]/path" after "http://"; the
// host and port are read by ParseHostPort (yuebing/common/host_port.h), port 80 by default and
// never 0. The path defaults to "/metadata". Errors: kInvalidArgument (malformed address).
absl::StatusOr<std::unique_ptr<MetadataStore>> NewHttpMetadataStore(
    absl::string_view address, std::chrono::milliseconds timeout);

}  // namespace yuebing::transport
