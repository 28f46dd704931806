// The avx512 XXH3 kernel (xxh3_kernel.h), compiled with -mavx512f and used only on CPUs that have
// it.
#define YB_XXH3_KERNEL kXxh3Avx512
#define YB_XXH3_KERNEL_NAME "avx512"
#include "common/xxh3_kernel_body.inc"
