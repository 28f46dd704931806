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
from yuebing._tensor import _INVALID_PARAMS
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
    BufferLeaseView,
    BufferPool,
    RegisteredBufferLease,
    RegisteredBufferLeaseView,
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
    "BufferLeaseView",
    "RegisteredBufferLeaseView",
    "BufferHandle",
    "MooncakeHostMemAllocator",
    "MooncakeConfig",
]


_RPC_FAIL = -900  # the real client (or master) did not answer
_DUMMY_SETUP_TIMEOUT_S = 5.0


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

    def setup_dummy(self, mem_pool_size: int, local_buffer_size: int,
                    server_address: str) -> int:
        """Joins the cluster of the real client at `server_address` ("host:port" of a
        `yuebing-client` / `mooncake_client`, same host) as a client that lends no memory.

        The real client answers its cluster's settings (see yuebing.real_client); this store then
        sets up with them, its transfer engine on the host of `server_address`, and moves data
        itself between its registered buffers and the stores (shared memory on the same host).
        `mem_pool_size` is accepted for upstream's signature: a dummy's buffers need no pool
        shared with the real client here (register_buffer works on any memory). Returns 0, -600
        for bad arguments or a store already set up, -900 when the real client does not answer
        within 5 s, or setup()'s code.
        """
        import json
        import urllib.error
        import urllib.request

        from yuebing.real_client import DUMMY_SETUP_PATH

        host, sep, port = str(server_address).rpartition(":")
        if (not sep or not host or not port.isdigit() or not isinstance(mem_pool_size, int)
                or not isinstance(local_buffer_size, int) or mem_pool_size < 0
                or local_buffer_size < 0):
            return _INVALID_PARAMS
        host = host.strip("[]")
        try:
            url = f"http://{server_address}{DUMMY_SETUP_PATH}"
            with urllib.request.urlopen(url, timeout=_DUMMY_SETUP_TIMEOUT_S) as reply:
                cluster = json.loads(reply.read())
        except (urllib.error.URLError, OSError, ValueError):
            return _RPC_FAIL
        return self.setup(host, cluster["metadata_server"], 0, local_buffer_size,
                          cluster["protocol"], cluster["device_names"],
                          cluster["master_server_address"], tenant_id=cluster["tenant_id"])

    def alloc_from_mem_pool(self, size: int) -> int:
        """Page-aligned host memory of `size` bytes for zero-copy calls (upstream's dummy-client
        allocation; works on any store here). Register it with register_buffer() before
        batch_put_from / batch_get_into use it. It lives as long as this store object (close()
        does not free it: buffers may still be in use). Returns the address, 0 on failure."""
        if not isinstance(size, int) or size <= 0:
            return 0
        allocator = self.__dict__.get("_mem_pool")
        if allocator is None:
            allocator = self.__dict__.setdefault("_mem_pool", MooncakeHostMemAllocator())
        return allocator.alloc(size)

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
