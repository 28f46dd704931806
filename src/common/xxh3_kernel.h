// XXH3-64 (seed 0) compiled for several x86 vector widths, one picked at run time: Debian's
// libxxhash is built for the x86-64 baseline (SSE2, ~21 GB/s on cached data here), while AVX2 gives
// ~33 GB/s and AVX-512 ~43 GB/s. Every kernel computes the same values (xxHash's vector paths are
// bit-identical); only their speed differs. Used by the object checksum rule (checksum.cc).
//
// Thread safety: the kernels are pure functions over the state they are given.
#pragma once

#include <cstddef>
#include <cstdint>

namespace yuebing::internal {

// Room for an XXH3_state_t (576 bytes in xxHash 0.8); each kernel checks that it fits.
inline constexpr size_t kXxh3StateBytes = 640;
struct alignas(64) Xxh3State {
  unsigned char bytes[kXxh3StateBytes];
};

struct Xxh3Kernel {
  const char* name;
  void (*reset)(Xxh3State* state);
  void (*update)(Xxh3State* state, const void* data, size_t length);
  uint64_t (*digest)(const Xxh3State* state);
};

extern const Xxh3Kernel kXxh3Baseline;
#if defined(YUEBING_XXH3_X86_KERNELS)
extern const Xxh3Kernel kXxh3Avx2;
extern const Xxh3Kernel kXxh3Avx512;
#endif

// The fastest kernel this CPU runs (chosen once).
const Xxh3Kernel& BestXxh3Kernel();

}  // namespace yuebing::internal
