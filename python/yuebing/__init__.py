"""yuebing: a Mooncake-compatible distributed KV cache store.

Modules:
    yuebing.store   MooncakeDistributedStore, ReplicateConfig (Mooncake's store API)
    yuebing.engine  TransferEngine (Mooncake's Python transfer engine API)
    yuebing.config  MooncakeConfig: settings from MOONCAKE_* variables or a JSON file

Installing the package also provides ``mooncake.store`` and ``mooncake.engine`` (unless built with
``-C cmake.define.YUEBING_PYTHON_MOONCAKE_ALIAS=OFF``), so programs written for Mooncake run on
yuebing unchanged.
"""

__version__ = "0.1.0"
