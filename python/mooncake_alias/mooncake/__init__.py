"""`mooncake` alias installed by yuebing: `mooncake.store` and `mooncake.engine` are yuebing's.

Programs written for Mooncake (``from mooncake.store import MooncakeDistributedStore``,
``from mooncake.engine import TransferEngine``) run on yuebing unchanged. Do not install this
alongside the upstream Mooncake wheel: both provide a top-level ``mooncake`` package.
"""

IMPLEMENTATION = "yuebing"

# As upstream's package: the buffer pool at the top level.
from mooncake.buffer_pool import BufferPool, RegisteredBufferPool  # noqa: E402

__all__ = ["BufferPool", "RegisteredBufferPool", "IMPLEMENTATION"]
