"""Store settings from environment variables or a JSON file, with Mooncake's names.

``MooncakeConfig.load_from_env()`` reads the file named by ``MOONCAKE_CONFIG_PATH`` when that
variable is set, otherwise these variables (``MOONCAKE_MASTER`` is required):

==================================  ===================  ==========================
variable                            field                default
==================================  ===================  ==========================
MOONCAKE_MASTER                     master_server_address (required)
MOONCAKE_TE_META_DATA_SERVER        metadata_server       ``P2PHANDSHAKE``
MOONCAKE_LOCAL_HOSTNAME             local_hostname        ``localhost``
MOONCAKE_PROTOCOL                   protocol              ``tcp``
MOONCAKE_DEVICE                     device_name           ``""``
MOONCAKE_GLOBAL_SEGMENT_SIZE        global_segment_size   3355443200 (3.125 GiB)
MOONCAKE_LOCAL_BUFFER_SIZE          local_buffer_size     1073741824 (1 GiB)
==================================  ===================  ==========================

Sizes are integers (bytes) or strings with a unit: ``"4GB"``, ``"512 MiB"``, ``"1.5g"``; K/M/G/T
mean powers of 1024, as in Mooncake. A string without a unit is read as Mooncake reads it
(``int(float(text))``: ``"1e9"``, ``"1.5"`` is 1). The JSON file uses the field names above as keys;
``local_hostname``, ``metadata_server`` and ``master_server_address`` are required there.

Reading, defaulting and checking these settings is done by the compiled module
(``yuebing::store::StoreConfig``, src/store/store_config.cc); this module only passes values
through.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any, Dict, Optional

from yuebing import _yuebing as _native

logger = logging.getLogger(__name__)

DEFAULT_GLOBAL_SEGMENT_SIZE: int = _native.DEFAULT_GLOBAL_SEGMENT_SIZE  # 3.125 GiB, Mooncake's
DEFAULT_LOCAL_BUFFER_SIZE: int = _native.DEFAULT_LOCAL_BUFFER_SIZE  # 1 GiB, Mooncake's default

# Protocols upstream's MooncakeConfig knows (others draw a warning there and here).
_UPSTREAM_PROTOCOLS = frozenset({
    "tcp", "rdma", "efa", "nvmeof", "nvlink", "musa", "nvlink_intra", "hip", "barex", "cxl",
    "ascend", "ub", "ubshmem", "maca", "sunrise_link", "rpc_only"})

# The fields MooncakeConfig's constructor checks and normalizes.
_CORE_FIELDS = ("local_hostname", "metadata_server", "global_segment_size", "local_buffer_size",
                "protocol", "device_name", "master_server_address")


def parse_size(value: Any) -> int:
    """Bytes from an int or a size string ("16MB", "1.5 GiB", "4096"). Raises ValueError."""
    return _native._parse_size_value(value)


def parse_bool(value: Any) -> bool:
    """A boolean from a bool, a number or text (true/false, yes/no, on/off, 1/0)."""
    return _native._parse_bool_value(value)


# Upstream's private names, which its callers and tests import.
_parse_segment_size = parse_size
_parse_bool = parse_bool


@dataclass
class MooncakeConfig:
    """Everything ``MooncakeDistributedStore.setup`` needs (Mooncake's MooncakeConfig)."""

    local_hostname: str
    metadata_server: str
    global_segment_size: int
    local_buffer_size: int
    protocol: str
    device_name: Optional[str]
    master_server_address: str
    enable_ssd_offload: bool = False
    ssd_offload_path: str = ""
    tenant_id: str = "default"
    enable_client_http_server: bool = False
    client_http_port: int = 9300

    def __post_init__(self) -> None:
        """Sizes parsed, protocol trimmed and lower-cased, required fields checked (ValueError).

        A protocol upstream does not know is passed through with a warning on ``logger``, as
        upstream does (setup() then refuses anything but tcp and rdma)."""
        fields = {name: getattr(self, name) for name in _CORE_FIELDS}
        for name, value in _native._store_config_fields(fields).items():
            setattr(self, name, value)
        if self.protocol not in _UPSTREAM_PROTOCOLS:
            logger.warning("Unrecognised protocol %r; passed through unchanged (yuebing's setup() "
                           "takes tcp or rdma).", self.protocol)

    @staticmethod
    def from_file(file_path: str) -> "MooncakeConfig":
        """Reads a JSON file; raises ValueError for a missing required field."""
        return MooncakeConfig(**_native._store_config_from_file(os.fspath(file_path)))

    @staticmethod
    def from_dict(data: Dict[str, Any]) -> "MooncakeConfig":
        return MooncakeConfig(**_native._store_config_from_dict(data))

    @staticmethod
    def load_from_env() -> "MooncakeConfig":
        """MOONCAKE_CONFIG_PATH's file if set, else the MOONCAKE_* variables (see module doc)."""
        return MooncakeConfig(**_native._store_config_from_env())

    def setup_args(self) -> tuple:
        """The seven positional arguments of ``MooncakeDistributedStore.setup``."""
        return (self.local_hostname, self.metadata_server, self.global_segment_size,
                self.local_buffer_size, self.protocol, self.device_name or "",
                self.master_server_address)
