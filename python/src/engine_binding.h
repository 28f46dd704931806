// Bindings of the transfer engine as Mooncake's Python `TransferEngine` (module yuebing._yuebing).
#pragma once

#include <pybind11/pybind11.h>

namespace yuebing::python {

void BindEngine(pybind11::module_& m);

}  // namespace yuebing::python
