// Bindings of yuebing::store::StoreConfig for python/yuebing/config.py (module yuebing._yuebing):
// the MooncakeConfig sources (constructor fields, dict, JSON file, environment), parse_size and
// parse_bool, and the defaults. Only marshalling lives here: Python values become JSON values,
// results come back as dicts of MooncakeConfig's fields; errors are raised as ValueError
// (FileNotFoundError / PermissionError / OSError when a config file cannot be read).
#pragma once

#include <pybind11/pybind11.h>

namespace yuebing::python {

void BindConfig(pybind11::module_& m);

}  // namespace yuebing::python
