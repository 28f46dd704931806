// Limits shared by the store client, the master, its gRPC server and the Python binding. Each
// is defined here once; every layer that checks it uses this value, so a request that one layer
// accepts is never refused by another for the same reason.
//
// Every refusal is kInvalidParams (-600, yuebing/common/error_code.h) unless a comment says
// otherwise; for a batch call it is one result per key (or, at the gRPC edge, the whole request).
#pragma once

#include <cstddef>
#include <cstdint>

namespace yuebing::limits {

// Object keys are 1..kMaxKeyBytes bytes. store::Client refuses a longer key before calling the
// master (that key's result only); the master refuses it in PutStart/UpsertStart (its
// MasterOptions::max_key_bytes defaults to this); the disk tier's FileStore refuses to write it.
// The Python binding passes keys through and returns the client's code.
inline constexpr size_t kMaxKeyBytes = 4096;

// Tenant ids are 1..kMaxTenantIdBytes bytes (yuebing/common/tenant_key.h).
inline constexpr size_t kMaxTenantIdBytes = 128;

// The longest scoped key (a user key within its tenant, yuebing/common/tenant_key.h): what the
// layers below store::Client (object client, disk tier, file store, READ_OBJECT) accept.
inline constexpr size_t kMaxScopedKeyBytes = kMaxKeyBytes + kMaxTenantIdBytes + 2;

// The most MasterOptions::max_key_bytes may be raised to: the object index
// stores a key's length in 16 bits. A larger setting is clamped to this.
inline constexpr size_t kMaxConfigurableKeyBytes = UINT16_MAX;

// Client ids (the store client's random 32-hex-digit id) are 1..kMaxClientIdBytes bytes.
// GrpcMasterServer refuses a request carrying a longer or empty one as a whole; MasterService
// refuses every call that names one (MountSegment, PutStart, PutEnd, SyncDiskTier, ...) and Ping
// answers kNeedRemount.
inline constexpr size_t kMaxClientIdBytes = 64;

// Segment names ("host:port" of a client's transfer engine) are 1..kMaxSegmentNameBytes bytes;
// MasterService::MountSegment refuses a longer one.
inline constexpr size_t kMaxSegmentNameBytes = 1024;

// Mounted segments and registered clients per master: a new segment or client past these is
// refused by MasterService with kNoAvailableHandle (-200).
inline constexpr size_t kMaxSegments = 65536;
inline constexpr size_t kMaxClients = 65536;

// ReplicateConfig::replica_num is 1..kMaxReplicas. The Python binding and store::Client refuse a
// larger value before any master call; MasterService places at most this many replicas (fewer
// when fewer segments have room) if a caller on the wire asks for more.
inline constexpr uint32_t kMaxReplicas = 64;

// RemoveByRegex patterns are 1..kMaxRegexBytes bytes. GrpcMasterServer and MasterService both
// refuse a longer one (the gRPC server also an empty one).
inline constexpr size_t kMaxRegexBytes = 1024;

// Keys per batch call. MasterService and GrpcMasterServer refuse a larger batch as a whole (every
// key gets kInvalidParams; BatchExist answers false for each) and touch nothing.
inline constexpr size_t kMaxBatchKeys = 4096;

// Entries (spilled + announced + removed objects) in one disk-tier report a store sends with
// SyncDiskTier. MasterService refuses a larger report as a whole; the store's disk tier keeps its
// reports under it (it falls back to a full re-announcement in chunks instead).
inline constexpr size_t kMaxDiskReportEntries = 65536;

}  // namespace yuebing::limits
