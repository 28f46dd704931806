// Test-only fault injection for the fault suite (tests/fault), off by default.
//
// When the environment variable YUEBING_TEST_FAULT_POINT equals the name passed to FaultPoint, the
// process kills itself with SIGKILL there (as `kill -9` from outside would, but at a known point).
// The variable is read once, at the first FaultPoint call; unset (the normal case) makes every
// FaultPoint a no-op after one getenv. Points used by the store client:
//   put_after_start  after PutStart answered, before any byte of the put is written
//   put_before_end   after the bytes were written, before PutEnd is sent
//
// Thread safety: thread-safe.
#pragma once

namespace yuebing::store {

void FaultPoint(const char* point);

}  // namespace yuebing::store
