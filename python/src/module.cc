// yuebing._yuebing: the compiled half of the Python package (see python/yuebing/). Logs of the
// C++ layers go to stderr so that they never mix with a program's stdout.
#include <malloc.h>
#include <pybind11/pybind11.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "config_binding.h"
#include "engine_binding.h"
#include "store_binding.h"
#include "yuebing/common/logging.h"

namespace {

// Objects come back as bytes objects and strings of about a MiB each. With glibc's defaults such
// blocks are mmap'ed or trimmed back to the kernel on free, so every read pays a page fault per
// 4 KiB twice (measured: get_batch of 16 x 1 MiB took 64 ms instead of 23 ms). Keep blocks up to
// 32 MiB on the heap and up to 256 MiB of freed heap mapped. Process-wide; skipped when the user
// tuned malloc (MALLOC_*_ variables, GLIBC_TUNABLES) or set YUEBING_MALLOC_TUNING=0.
void TuneMalloc() {
  const char* opt_out = std::getenv("YUEBING_MALLOC_TUNING");
  if (opt_out != nullptr && std::strcmp(opt_out, "0") == 0) return;
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"}) {
    if (std::getenv(name) != nullptr) return;
  }
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

}  // namespace

PYBIND11_MODULE(_yuebing, m) {
  m.doc() = "yuebing: Mooncake-compatible distributed KV cache store (compiled module)";
  TuneMalloc();
  yuebing::InitLogging();
  std::shared_ptr<spdlog::logger> logger = spdlog::get("yuebing");
  if (logger == nullptr) logger = spdlog::stderr_color_mt("yuebing");
  logger->set_level(spdlog::get_level());
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] [%t] %v");
  yuebing::python::BindConfig(m);
  yuebing::python::BindStore(m);
  yuebing::python::BindEngine(m);
}
