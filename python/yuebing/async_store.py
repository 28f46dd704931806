"""asyncio form of the store (Mooncake's ``mooncake.async_store``).

    store = MooncakeDistributedStoreAsync()
    store.setup(...)                       # setup/close stay synchronous
    await store.async_put("k", b"v")       # every method M is also awaitable as async_M
    await store.async_get_batch(["k"])

``async_<name>(*args, **kwargs)`` runs ``<name>`` on a thread pool and returns its result, so
the event loop never waits on the network: the native methods release the GIL during I/O, so
several awaited calls run at once. Results and error codes are those of the synchronous method.
Each store has its own pool (``max_workers`` threads, 8 by default), so a burst of store calls
never fills the loop's default executor that other libraries share; ``close()`` (or
``async_close()``) shuts the pool down after the calls already submitted.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from typing import Any, Callable

from yuebing.store import MooncakeDistributedStore

__all__ = ["MooncakeDistributedStoreAsync"]

_PREFIX = "async_"


class MooncakeDistributedStoreAsync(MooncakeDistributedStore):
    """MooncakeDistributedStore whose methods are also awaitable as ``async_<method>``."""

    def __init__(self, *args: Any, max_workers: int = 8, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        self._async_pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix="yuebing-async")

    def __getattr__(self, name: str) -> Callable[..., Any]:
        # Only reached for names the class and instance lack: build async_<name> once, then cache.
        if not name.startswith(_PREFIX) or name == _PREFIX:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        sync_name = name[len(_PREFIX):]
        try:
            method = getattr(self, sync_name)
        except AttributeError:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r} "
                                 f"(no method {sync_name!r} to run)") from None
        if not callable(method):
            raise AttributeError(f"{sync_name!r} is not a method, so {name!r} does not exist")
        pool = self._async_pool

        @functools.wraps(method)
        async def run_in_pool(*args: Any, **kwargs: Any) -> Any:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(pool, functools.partial(method, *args, **kwargs))

        run_in_pool.__name__ = name
        setattr(self, name, run_in_pool)
        return run_in_pool

    def close(self) -> int:
        rc = super().close()
        # Calls already queued finish (they then see a closed store and return its error code).
        self._async_pool.shutdown(wait=False)
        return rc
