"""Mooncake's ``BufferPool`` (``mooncake.store.BufferPool`` / ``mooncake.buffer_pool``): staging
buffers for the zero-copy calls (``put_from``, ``get_into``, their batch forms), handed out as
leases.

    pool = BufferPool(store)
    with pool.acquire(1 << 20) as lease:
        lease.buffer[:5] = b"hello"                  # a writable memoryview of lease.size bytes
        store.put_from("key", lease.ptr, 5)
        del ...                                      # drop views before the lease ends

Upstream carves leases out of the store's registered local buffer because its zero-copy calls need
registered memory. yuebing's zero-copy calls work on any memory, so a lease is page-aligned memory
of the pool's own; released buffers are kept per size class and handed out again (their pages
stay mapped), within the pool's byte budget.

Limits, as upstream: ``max_bytes`` (0: twice the store's ``local_buffer_size``; otherwise at least
``local_buffer_size``) bounds the bytes of the leases out and the buffers kept; ``max_regions``
bounds the number of leases out. When a lease does not fit, ``acquire`` waits for a release
(``block_on_exhaustion``, up to ``timeout``/``default_timeout`` seconds) or raises
``RuntimeError``. Every deliberate error is a ``RuntimeError`` whose text matches upstream's.

Thread safety: a pool may be used from several threads; a blocked ``acquire`` releases the GIL
while it waits. A lease is meant for one thread at a time.
"""

from __future__ import annotations

import ctypes
import mmap
import threading
import time
from typing import Dict, List, Optional

__all__ = [
    "BufferPool",
    "BufferLease",
    "RegisteredBufferPool",
    "RegisteredBufferLease",
    "BufferLeaseView",
    "RegisteredBufferLeaseView",
]

_PAGE = mmap.PAGESIZE
_MAX_SIZE = (1 << 64) - 1


def _check_size(name: str, value: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0 or value > _MAX_SIZE:
        raise TypeError(f"{name} must be an integer in [0, 2**64)")
    return value


def _address_of(region: mmap.mmap) -> int:
    view = ctypes.c_char.from_buffer(region)
    try:
        return ctypes.addressof(view)
    finally:
        del view  # releases the export, so that the region can be closed later


class BufferLease:
    """One buffer of a BufferPool, until ``release()`` (or the end of a ``with`` block)."""

    def __init__(self, pool: "BufferPool", region: mmap.mmap, size_class: int, size: int):
        self._pool: Optional[BufferPool] = pool
        self._region: Optional[mmap.mmap] = region
        self._class = size_class
        self._size = size
        self._ptr = _address_of(region)

    @property
    def ptr(self) -> int:
        """Address of the buffer (an int for the zero-copy calls)."""
        if self._region is None:
            raise RuntimeError("buffer lease is closed")
        return self._ptr

    @property
    def size(self) -> int:
        """The size asked for (the buffer may be larger)."""
        return self._size

    @property
    def buffer(self) -> memoryview:
        """A new writable memoryview of ``size`` bytes. Views must be gone before release()."""
        if self._region is None:
            raise RuntimeError("buffer lease is closed")
        return memoryview(self._region)[: self._size]

    def release(self) -> None:
        """Gives the buffer back to the pool; a second call does nothing.

        Raises RuntimeError while memoryviews of ``buffer`` are alive (the lease stays usable).
        """
        if self._region is None:
            return
        self._pool._give_back(self, check_views=True)

    def __enter__(self) -> "BufferLease":
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def __del__(self) -> None:
        if getattr(self, "_region", None) is not None and self._pool is not None:
            try:
                self._pool._give_back(self, check_views=False)
            except Exception:  # noqa: BLE001 (a finalizer must not raise)
                pass

    def __repr__(self) -> str:
        state = "released" if self._region is None else f"ptr={self._ptr:#x}"
        return f"<BufferLease size={self._size} {state}>"


class BufferPool:
    """Leases of staging buffers, bounded in bytes and count (see the module doc)."""

    def __init__(
        self,
        store,
        max_bytes: int = 0,
        min_size_class: int = 64 * 1024,
        max_size_class: Optional[int] = None,
        alignment: int = 8 * 1024 * 1024,
        block_on_exhaustion: bool = True,
        default_timeout: Optional[float] = None,
        max_regions: Optional[int] = None,
        prewarm_size: Optional[int] = None,
        prewarm_count: int = 0,
    ):
        if store is None:
            raise RuntimeError("MooncakeDistributedStore is not initialized")
        local = getattr(store, "_local_buffer_size", None)
        local_buffer_size = local() if callable(local) else None
        if local_buffer_size is None:
            raise RuntimeError("MooncakeDistributedStore is not initialized")
        for name, value in (
            ("max_bytes", max_bytes),
            ("min_size_class", min_size_class),
            ("alignment", alignment),
            ("prewarm_count", prewarm_count),
        ):
            _check_size(name, value)
        if max_size_class is not None:
            _check_size("max_size_class", max_size_class)
        if max_regions is not None:
            _check_size("max_regions", max_regions)
        if min_size_class == 0 or alignment == 0:
            raise RuntimeError("min_size_class and alignment must be positive")
        if alignment & (alignment - 1) or alignment < ctypes.sizeof(ctypes.c_void_p):
            raise RuntimeError("alignment must be a power of two and at least sizeof(void*)")
        if default_timeout is not None and default_timeout < 0:
            raise RuntimeError("timeout must be non-negative")
        if max_bytes == 0:
            # Upstream: twice the local buffer. yuebing needs no local buffer; without one the
            # budget is unbounded.
            max_bytes = 2 * local_buffer_size if local_buffer_size > 0 else _MAX_SIZE
        else:
            max_bytes = max(max_bytes, local_buffer_size)
        self._store = store
        self._max_bytes = max_bytes
        self._min_class = min_size_class
        self._max_class = max_bytes if max_size_class is None else max_size_class
        self._block = bool(block_on_exhaustion)
        self._default_timeout = default_timeout
        self._max_regions = max_regions
        self._cond = threading.Condition()
        self._free: Dict[int, List[mmap.mmap]] = {}  # size class -> kept buffers
        self._free_bytes = 0
        # Leases out: counted, not referenced (a lease dropped without release() is collected
        # and gives its buffer back from its finalizer).
        self._active_count = 0
        self._active_bytes = 0
        self._closed = False
        if prewarm_size is not None and prewarm_count > 0:
            self.prewarm(prewarm_size, prewarm_count)

    # --- sizes ---

    def _size_class(self, size: int) -> int:
        """Bytes reserved for a lease of `size` (whole pages): min_size_class for sizes up to it,
        then four classes per power of two (at most 25% over the size) up to max_size_class, the
        size itself rounded to pages above that. Released buffers are reused by class."""
        size = max(size, 1)
        if size <= self._min_class:
            size_class = self._min_class
        elif size <= self._max_class:
            step = max(1 << max((size - 1).bit_length() - 3, 0), _PAGE)
            size_class = -(-size // step) * step
        else:
            size_class = size
        return -(-size_class // _PAGE) * _PAGE

    # --- leases ---

    def acquire(self, size: int, block: Optional[bool] = None, timeout: Optional[float] = None):
        """A lease of at least `size` bytes (see the module doc for waiting and errors)."""
        _check_size("size", size)
        block = self._block if block is None else bool(block)
        timeout = self._default_timeout if timeout is None else timeout
        if timeout is not None and timeout < 0:
            raise RuntimeError("timeout must be non-negative")
        if max(size, 1) > self._max_bytes:
            raise RuntimeError("requested buffer size exceeds pool capacity")
        size_class = self._size_class(size)
        if size_class > self._max_bytes:
            size_class = max(size, 1)  # fits the budget only unrounded
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if self._closed:
                    raise RuntimeError("buffer pool is closed")
                region = self._take_locked(size_class)
                if region is not None:
                    break
                if not block:
                    raise RuntimeError("buffer pool is exhausted")
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise RuntimeError("timed out waiting for buffer")
                self._cond.wait(remaining)
            self._active_count += 1
            return BufferLease(self, region, size_class, size)

    buffer = acquire

    def _take_locked(self, size_class: int) -> Optional[mmap.mmap]:
        """A buffer of `size_class` bytes within the limits, or None when none fits now."""
        if self._max_regions is not None and self._active_count >= self._max_regions:
            return None
        kept = self._free.get(size_class)
        if kept:
            region = kept.pop()
            self._free_bytes -= size_class
            self._active_bytes += size_class
            return region
        # Make room by dropping kept buffers of other classes, smallest budget first.
        while self._active_bytes + self._free_bytes + size_class > self._max_bytes:
            if not self._drop_one_kept_locked():
                return None
        try:
            region = mmap.mmap(-1, size_class)
        except (OSError, ValueError, OverflowError):
            return None
        self._active_bytes += size_class
        return region

    def _drop_one_kept_locked(self) -> bool:
        for size_class, kept in self._free.items():
            if kept:
                kept.pop().close()
                self._free_bytes -= size_class
                return True
        return False

    def _give_back(self, lease: BufferLease, check_views: bool) -> None:
        with self._cond:
            region = lease._region
            if region is None:
                return  # released already (by another thread)
            if check_views and not _unexported(region):
                raise RuntimeError("cannot release buffer while exported views exist")
            lease._region = None
            self._active_count -= 1
            self._active_bytes -= lease._class
            if not self._closed and _unexported(region):
                self._free.setdefault(lease._class, []).append(region)
                self._free_bytes += lease._class
            # else: the views keep the mapping alive; it goes with the last of them.
            self._cond.notify_all()

    # --- pool ---

    def prewarm(self, size: int, count: int) -> None:
        """Maps `count` buffers of the class of `size` ahead of use (within the byte budget)."""
        _check_size("size", size)
        _check_size("count", count)
        size_class = self._size_class(size)
        with self._cond:
            for _ in range(count):
                if self._closed or self._active_bytes + self._free_bytes + size_class > self._max_bytes:
                    return
                try:
                    region = mmap.mmap(-1, size_class)
                except (OSError, ValueError, OverflowError):
                    return
                self._free.setdefault(size_class, []).append(region)
                self._free_bytes += size_class

    def close(self) -> None:
        """Unmaps the kept buffers; refused (RuntimeError) while leases are out. Idempotent."""
        with self._cond:
            if self._closed:
                return
            if self._active_count:
                raise RuntimeError("cannot close buffer pool with active leases")
            self._closed = True
            for kept in self._free.values():
                for region in kept:
                    region.close()
            self._free.clear()
            self._free_bytes = 0
            self._cond.notify_all()


def _unexported(region: mmap.mmap) -> bool:
    """Whether no memoryview of `region` is alive. mmap keeps no public export count, but its
    resize refuses while any export is alive; resizing to the same length maps nothing anew
    (Linux's mremap returns the same address for an unchanged length)."""
    try:
        region.resize(len(region))
    except BufferError:
        return False
    return True


RegisteredBufferPool = BufferPool
RegisteredBufferLease = BufferLease
# Upstream's type of BufferLease.buffer (a buffer-protocol view); here it is a memoryview.
BufferLeaseView = memoryview
RegisteredBufferLeaseView = BufferLeaseView
