#include "common/xxh3_kernel.h"

namespace yuebing::internal {

const Xxh3Kernel& BestXxh3Kernel() {
  static const Xxh3Kernel& best = []() -> const Xxh3Kernel& {
#if defined(YUEBING_XXH3_X86_KERNELS)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return kXxh3Avx512;
    if (__builtin_cpu_supports("avx2")) return kXxh3Avx2;
#endif
    return kXxh3Baseline;
  }();
  return best;
}

}  // namespace yuebing::internal
