"""mooncake.async_store.MooncakeDistributedStoreAsync on a real cluster: every method awaitable as
async_<method>, results equal to the synchronous ones, concurrent calls, and an event loop that
keeps running while calls are in flight."""
import asyncio
import os
import time

import pytest


@pytest.fixture
def async_store(cluster):
    from mooncake.async_store import MooncakeDistributedStoreAsync

    store = MooncakeDistributedStoreAsync()
    assert store.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "",
                       cluster.master_address) == 0
    yield store
    store.close()

def test_async_methods_return_what_the_sync_methods_return(async_store):
    async def scenario():
        value = os.urandom(200_000)
        assert await async_store.async_put("async-one", value) == 0
        assert await async_store.async_get("async-one") == value
        assert await async_store.async_is_exist("async-one") == 1
        assert await async_store.async_is_exist("async-absent") == 0
        assert await async_store.async_get("async-absent") == b""
        keys = [f"async-batch-{i}" for i in range(8)]
        values = [os.urandom(1000 + i) for i in range(8)]
        assert await async_store.async_put_batch(keys, values) == 0
        assert await async_store.async_get_batch(keys) == values
        assert await async_store.async_batch_is_exist(keys + ["async-absent"]) == [1] * 8 + [0]
        # A finished read has ended its lease: remove works at once, as the synchronous call does.
        assert await async_store.async_remove("async-one") == 0
        assert await async_store.async_put("async-unread", b"x") == 0
        assert await async_store.async_remove("async-unread") == 0
        assert await async_store.async_is_exist("async-unread") == 0
        # The same object answers synchronously too.
        assert async_store.get(keys[0]) == values[0]

    asyncio.run(scenario())

def test_many_concurrent_calls_each_get_their_own_bytes(async_store):
    async def scenario():
        values = {f"async-many-{i}": os.urandom(64 << 10) for i in range(32)}
        rcs = await asyncio.gather(*(async_store.async_put(k, v) for k, v in values.items()))
        assert rcs == [0] * len(values)
        got = await asyncio.gather(*(async_store.async_get(k) for k in values))
        assert got == list(values.values())

    asyncio.run(scenario())

def test_event_loop_keeps_running_while_calls_are_in_flight(async_store):
    async def scenario():
        ticks = 0
        stop = asyncio.Event()

        async def ticker():
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                await asyncio.sleep(0.001)

        ticking = asyncio.create_task(ticker())
        await asyncio.sleep(0)  # let the ticker start
        start_ticks, start = ticks, time.monotonic()
        big = os.urandom(32 << 20)
        for i in range(4):
            assert await async_store.async_put(f"async-big-{i}", big) == 0
            assert await async_store.async_get(f"async-big-{i}") == big
        elapsed = time.monotonic() - start
        stop.set()
        await ticking
        # The loop ran the ticker throughout: at least a tick per 20 ms of I/O (it ticks about
        # every millisecond when nothing blocks it).
        assert ticks - start_ticks >= max(1, int(elapsed / 0.02)), (ticks - start_ticks, elapsed)

    asyncio.run(scenario())

def test_unknown_and_non_method_names_raise_attribute_error(async_store):
    with pytest.raises(AttributeError, match="no_such_method"):
        async_store.async_no_such_method
    with pytest.raises(AttributeError):
        async_store.not_async_and_absent
    assert callable(async_store.async_get)
    assert async_store.async_get is async_store.async_get  # built once, then cached

def test_calls_after_close_return_the_closed_store_error(cluster):
    from mooncake.async_store import MooncakeDistributedStoreAsync

    store = MooncakeDistributedStoreAsync(max_workers=2)
    assert store.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "",
                       cluster.master_address) == 0

    async def scenario():
        assert await store.async_put("async-closing", b"x") == 0
        assert await store.async_close() == 0
        # close() shut the pool: a new async call is refused, the sync form answers -600.
        with pytest.raises(RuntimeError):
            await store.async_get("async-closing")
        assert store.put("async-closing-2", b"y") == -600

    asyncio.run(scenario())
    with pytest.raises(ValueError):
        MooncakeDistributedStoreAsync(max_workers=0)
