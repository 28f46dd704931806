// The avx2 XXH3 kernel (xxh3_kernel.h), compiled with -mavx2 and used only on CPUs that have it.
#define YB_XXH3_KERNEL kXxh3Avx2
#define YB_XXH3_KERNEL_NAME "avx2"
#include "common/xxh3_kernel_body.inc"
