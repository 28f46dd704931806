// The baseline XXH3 kernel (xxh3_kernel.h): the compiler's default flags.
#define YB_XXH3_KERNEL kXxh3Baseline
#define YB_XXH3_KERNEL_NAME "baseline"
#include "common/xxh3_kernel_body.inc"
