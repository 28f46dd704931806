"""Alias of yuebing.buffer_pool (Mooncake's `mooncake.buffer_pool`)."""

from yuebing.buffer_pool import BufferPool, RegisteredBufferPool  # noqa: F401

__all__ = ["BufferPool", "RegisteredBufferPool"]
