// Bindings of the store client as Mooncake's `MooncakeDistributedStore`, `ReplicateConfig`,
// `BufferHandle` and `MooncakeHostMemAllocator` (module yuebing._yuebing).
#pragma once

#include <pybind11/pybind11.h>

namespace yuebing::python {

void BindStore(pybind11::module_& m);

}  // namespace yuebing::python
