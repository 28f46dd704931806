"""Mooncake's Python TransferEngine API, implemented by yuebing's transfer engine.

    from yuebing.engine import TransferEngine
    engine = TransferEngine()
    engine.initialize("127.0.0.1", "P2PHANDSHAKE", "tcp", "")
    engine.register_memory(addr, size)
    engine.transfer_sync_write("host:port", addr, peer_addr, size)   # 0 or -1

Return codes follow Mooncake: 0 / -1 for initialize and synchronous transfers, batch ids (0 on
failure) for asynchronous ones, 1 / 0 / -1 / -2 from transfer_check_status.
"""

from yuebing._yuebing import (  # noqa: F401  (re-exports)
    SUPPORT_CUDA,
    SUPPORT_EFA,
    SUPPORT_HIP,
    SUPPORT_INTRA_NVLINK,
    SUPPORT_MNNVL,
    SUPPORT_MUSA,
    TransferEngine,
    TransferNotify,
    TransferOpcode,
)

__all__ = [
    "TransferEngine",
    "TransferNotify",
    "TransferOpcode",
    "SUPPORT_CUDA",
    "SUPPORT_EFA",
    "SUPPORT_HIP",
    "SUPPORT_INTRA_NVLINK",
    "SUPPORT_MNNVL",
    "SUPPORT_MUSA",
]
