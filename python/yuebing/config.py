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
mean powers of 1024, as in Mooncake. The JSON file uses the field names above as keys;
``local_hostname``, ``metadata_server`` and ``master_server_address`` are required there.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from typing import Any, Dict, Optional

logger = logging.getLogger(__name__)

DEFAULT_GLOBAL_SEGMENT_SIZE = 3355443200  # 3.125 GiB, Mooncake's default
DEFAULT_LOCAL_BUFFER_SIZE = 1073741824  # 1 GiB, Mooncake's default

_KNOWN_PROTOCOLS = ("tcp", "rdma")
_REQUIRED_FILE_FIELDS = ("local_hostname", "metadata_server", "master_server_address")


def parse_size(value: Any) -> int:
    """Bytes from an int or a size string ("16MB", "1.5 GiB", "4096"). Raises ValueError."""
    if isinstance(value, bool):
        raise ValueError(f"invalid size: {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"invalid size: {value} (must be >= 0)")
        return value
    if isinstance(value, float):
        if value < 0:
            raise ValueError(f"invalid size: {value} (must be >= 0)")
        return int(value)
    if isinstance(value, str):
        from yuebing._yuebing import parse_size as _parse

        text = value.strip()
        if not text:
            raise ValueError("invalid size: empty string")
        return int(_parse(text))
    raise ValueError(f"invalid size: {value!r}")


def parse_bool(value: Any) -> bool:
    """A boolean from a bool, a number or text (true/false, yes/no, on/off, 1/0)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return bool(value)
    if value is None:
        return False
    text = str(value).strip().lower()
    if text in ("", "0", "false", "no", "off"):
        return False
    if text in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"invalid boolean: {value!r}")


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
        if not isinstance(self.protocol, str) or not self.protocol.strip():
            raise ValueError(f"invalid protocol: {self.protocol!r} (e.g. 'tcp')")
        self.protocol = self.protocol.strip().lower()
        if self.protocol not in _KNOWN_PROTOCOLS:
            logger.warning("protocol %r is not one of %s; setup() will reject it",
                           self.protocol, ", ".join(_KNOWN_PROTOCOLS))
        self.global_segment_size = parse_size(self.global_segment_size)
        self.local_buffer_size = parse_size(self.local_buffer_size)
        for name in _REQUIRED_FILE_FIELDS:
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"config field {name!r} must be a non-empty string, got {value!r}")
        if self.device_name is None:
            self.device_name = ""

    @staticmethod
    def from_file(file_path: str) -> "MooncakeConfig":
        """Reads a JSON file; raises ValueError for a missing required field."""
        with open(file_path) as f:
            data = json.load(f)
        return MooncakeConfig.from_dict(data)

    @staticmethod
    def from_dict(data: Dict[str, Any]) -> "MooncakeConfig":
        for name in _REQUIRED_FILE_FIELDS:
            if name not in data:
                raise ValueError(f"missing required config field: {name}")
        return MooncakeConfig(
            local_hostname=data["local_hostname"],
            metadata_server=data["metadata_server"],
            global_segment_size=data.get("global_segment_size", DEFAULT_GLOBAL_SEGMENT_SIZE),
            local_buffer_size=data.get("local_buffer_size", DEFAULT_LOCAL_BUFFER_SIZE),
            protocol=data.get("protocol", "tcp"),
            device_name=data.get("device_name", ""),
            master_server_address=data["master_server_address"],
            enable_ssd_offload=parse_bool(data.get("enable_ssd_offload", False)),
            ssd_offload_path=str(data.get("ssd_offload_path") or ""),
            tenant_id=str(data.get("tenant_id") or "default"),
            enable_client_http_server=parse_bool(data.get("enable_client_http_server", False)),
            client_http_port=int(data.get("client_http_port", 9300)),
        )

    @staticmethod
    def load_from_env() -> "MooncakeConfig":
        """MOONCAKE_CONFIG_PATH's file if set, else the MOONCAKE_* variables (see module doc)."""
        path = os.getenv("MOONCAKE_CONFIG_PATH")
        if path:
            return MooncakeConfig.from_file(path)
        master = os.getenv("MOONCAKE_MASTER")
        if not master:
            raise ValueError(
                "neither MOONCAKE_CONFIG_PATH nor MOONCAKE_MASTER is set in the environment")
        return MooncakeConfig(
            local_hostname=os.getenv("MOONCAKE_LOCAL_HOSTNAME", "localhost"),
            metadata_server=os.getenv("MOONCAKE_TE_META_DATA_SERVER", "P2PHANDSHAKE"),
            global_segment_size=os.getenv("MOONCAKE_GLOBAL_SEGMENT_SIZE",
                                          DEFAULT_GLOBAL_SEGMENT_SIZE),
            local_buffer_size=os.getenv("MOONCAKE_LOCAL_BUFFER_SIZE", DEFAULT_LOCAL_BUFFER_SIZE),
            protocol=os.getenv("MOONCAKE_PROTOCOL", "tcp"),
            device_name=os.getenv("MOONCAKE_DEVICE", ""),
            master_server_address=master,
            enable_ssd_offload=parse_bool(os.getenv("MOONCAKE_OFFLOAD_ENABLED", "false")),
            ssd_offload_path=os.getenv("MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", ""),
            tenant_id=os.getenv("MOONCAKE_TENANT_ID", "default"),
            enable_client_http_server=parse_bool(
                os.getenv("MOONCAKE_ENABLE_CLIENT_HTTP_SERVER", "false")),
            client_http_port=int(os.getenv("MOONCAKE_CLIENT_HTTP_PORT", "9300")),
        )

    def setup_args(self) -> tuple:
        """The seven positional arguments of ``MooncakeDistributedStore.setup``."""
        return (self.local_hostname, self.metadata_server, self.global_segment_size,
                self.local_buffer_size, self.protocol, self.device_name or "",
                self.master_server_address)
