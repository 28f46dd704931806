// yuebing._yuebing: the compiled half of the Python package (see python/yuebing/). Logs of the
// C++ layers go to stderr so that they never mix with a program's stdout.
#include <pybind11/pybind11.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <memory>

#include "engine_binding.h"
#include "store_binding.h"
#include "yuebing/common/logging.h"

PYBIND11_MODULE(_yuebing, m) {
  m.doc() = "yuebing: Mooncake-compatible distributed KV cache store (compiled module)";
  yuebing::InitLogging();
  std::shared_ptr<spdlog::logger> logger = spdlog::get("yuebing");
  if (logger == nullptr) logger = spdlog::stderr_color_mt("yuebing");
  logger->set_level(spdlog::get_level());
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] [%t] %v");
  yuebing::python::BindStore(m);
  yuebing::python::BindEngine(m);
}
