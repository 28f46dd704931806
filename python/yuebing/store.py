"""Mooncake's store API (``mooncake.store``) on yuebing.

    from yuebing.store import MooncakeDistributedStore, ReplicateConfig
    store = MooncakeDistributedStore()
    rc = store.setup("127.0.0.1", "P2PHANDSHAKE", 512 << 20, 16 << 20, "tcp", "",
                     "127.0.0.1:50051")                    # 0 or a negative error code
    store.put("key", b"value")                             # 0
    store.get("key")                                       # b"value" (b"" on a miss)
    store.close()

Every method returns Mooncake's codes: 0 or a negative error code (-600 invalid parameters, also
before setup() and after close(); -704 object not found; -706 object has a lease; -707 lease
expired; -200 no space; -800 transfer failed; -900 master unreachable). ``get``/``get_batch``
return b"" for a miss, ``get_buffer`` None. The GIL is released during all I/O; one store may be
used from several threads.

When torch is importable the tensor methods (put_tensor, get_tensor, their batch, pub, upsert,
tensor-parallel and zero-copy forms) are present as well.
"""

from __future__ import annotations

import importlib.util

from yuebing import _tensor
from yuebing._yuebing import (  # noqa: F401  (re-exports)
    BufferHandle,
    Descriptor,
    DiskDescriptor,
    MemoryDescriptor,
    MooncakeHostMemAllocator,
    ObjectDataType,
    QueryTaskResponse,
    ReplicaDescriptor,
    ReplicaStatus,
    ReplicateConfig,
    SoftPinAction,
    TaskStatus,
    TaskType,
)
from yuebing._yuebing import MooncakeDistributedStore as _NativeStore
from yuebing.buffer_pool import (  # noqa: F401  (re-exports)
    BufferLease,
    BufferPool,
    RegisteredBufferLease,
    RegisteredBufferPool,
)
from yuebing.config import MooncakeConfig

__all__ = [
    "MooncakeDistributedStore",
    "ReplicateConfig",
    "SoftPinAction",
    "ObjectDataType",
    "TaskType",
    "TaskStatus",
    "QueryTaskResponse",
    "ReplicaStatus",
    "ReplicaDescriptor",
    "MemoryDescriptor",
    "DiskDescriptor",
    "Descriptor",
    "BufferPool",
    "BufferLease",
    "RegisteredBufferPool",
    "RegisteredBufferLease",
    "BufferHandle",
    "MooncakeHostMemAllocator",
    "MooncakeConfig",
]


class MooncakeDistributedStore(_NativeStore):
    """A store client: Put/Get of immutable objects in a yuebing cluster (see module doc)."""

    def setup_from_config(self, config: MooncakeConfig) -> int:
        """yuebing extension: setup() with the settings of a MooncakeConfig."""
        return self.setup(
            *config.setup_args(),
            enable_ssd_offload=config.enable_ssd_offload,
            ssd_offload_path=config.ssd_offload_path,
            tenant_id=config.tenant_id,
            enable_client_http_server=config.enable_client_http_server,
            client_http_port=config.client_http_port,
        )

    def setup_from_env(self) -> int:
        """yuebing extension: setup() from MOONCAKE_CONFIG_PATH or the MOONCAKE_* variables.

        Raises ValueError when neither MOONCAKE_CONFIG_PATH nor MOONCAKE_MASTER is set or a value
        is malformed; otherwise returns setup()'s code.
        """
        return self.setup_from_config(MooncakeConfig.load_from_env())

    def get_offload_rpc_read_count(self) -> int:
        """Reads served from a store's disk tier by this client (upstream's counter of
        offloaded-object reads); 0 before setup()."""
        return int(self.stats().get("disk_reads", 0))

    def init_all(self, protocol: str, device_name: str, mount_segment_size: int) -> int:
        """Upstream's legacy one-call setup, with its fixed addresses: engine "localhost:12345",
        etcd metadata at 127.0.0.1:2379, master 127.0.0.1:50051, a segment of
        `mount_segment_size` bytes. Returns setup()'s code (-600 on a store already set up)."""
        return self.setup("localhost:12345", "127.0.0.1:2379", mount_segment_size, 1 << 30,
                          protocol, device_name, "127.0.0.1:50051")

    def __enter__(self) -> "MooncakeDistributedStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


if importlib.util.find_spec("torch") is not None:
    _tensor.install(MooncakeDistributedStore)
