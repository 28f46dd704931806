"""BufferPool (Mooncake's staging-buffer leases) on a real store: leases used by the zero-copy
calls byte for byte, limits in bytes and count with waiting, timeouts and errors as upstream's,
views that keep a lease from ending, and buffers reused after release."""

import gc
import threading
import time

import pytest

from yuebing.store import BufferPool, MooncakeDistributedStore, RegisteredBufferPool

LOCAL = 4 << 20  # the local_buffer_size of the stores below


@pytest.fixture
def local_store(make_store):
    return make_store(local_buffer_size=LOCAL)


def test_a_lease_stages_bytes_for_put_from_and_get_into(local_store):
    pool = BufferPool(local_store)
    payload = bytes(range(256)) * 16
    with pool.acquire(len(payload)) as lease:
        view = lease.buffer
        from mooncake.store import BufferLeaseView, RegisteredBufferLeaseView
        assert isinstance(view, BufferLeaseView) and RegisteredBufferLeaseView is BufferLeaseView
        view[:] = payload
        del view
        assert lease.ptr % 64 == 0
        assert local_store.put_from("bpool-k", lease.ptr, len(payload)) == 0
    with pool.buffer(len(payload)) as out:
        assert local_store.get_into("bpool-k", out.ptr, out.size) == len(payload)
        assert bytes(out.buffer) == payload
    pool.close()


def test_sizes_are_the_sizes_asked_for(local_store):
    pool = BufferPool(local_store, 1 << 20, max_size_class=128 << 10, alignment=4096)
    for size in (0, 1, 131073):
        lease = pool.acquire(size)
        assert lease.size == size and len(lease.buffer) == size
        lease.release()
        lease.release()  # a second release does nothing
        with pytest.raises(RuntimeError, match="closed"):
            lease.ptr
    pool.close()


def test_released_buffers_are_reused(local_store):
    pool = BufferPool(local_store, min_size_class=4096, alignment=4096)
    first = pool.acquire(3000)
    ptr = first.ptr
    first.release()
    second = pool.acquire(4000)  # the same size class
    assert second.ptr == ptr
    second.release()
    pool.close()


def test_the_byte_budget_is_at_least_the_local_buffer(local_store):
    pool = BufferPool(local_store, 4096, block_on_exhaustion=False)  # raised to LOCAL
    whole = pool.acquire(LOCAL)
    with pytest.raises(RuntimeError, match="exhausted"):
        pool.acquire(1)
    whole.release()
    small = pool.acquire(1)  # fits again; the kept 4 MiB buffer made room
    small.release()
    with pytest.raises(RuntimeError, match="capacity"):
        pool.acquire(LOCAL + 1)
    with pytest.raises(RuntimeError, match="overflow|capacity"):
        pool.acquire((1 << 64) - 1)
    pool.close()


def test_default_budget_is_twice_the_local_buffer(local_store):
    pool = BufferPool(local_store, block_on_exhaustion=False)
    a, b = pool.acquire(LOCAL), pool.acquire(LOCAL)
    with pytest.raises(RuntimeError, match="exhausted"):
        pool.acquire(1)
    a.release()
    b.release()
    pool.close()


def test_max_regions_and_waiting(local_store):
    pool = BufferPool(local_store, min_size_class=4096, alignment=4096, max_regions=1)
    held = pool.acquire(1)
    with pytest.raises(RuntimeError, match="exhausted"):
        pool.acquire(1, block=False)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="timed out waiting for buffer"):
        pool.acquire(1, timeout=0.2)
    assert time.monotonic() - started >= 0.2
    got = []
    waiter = threading.Thread(target=lambda: got.append(pool.acquire(1)))
    waiter.start()
    time.sleep(0.1)  # the waiter blocks without holding the GIL
    assert not got
    held.release()
    waiter.join(5)
    assert len(got) == 1
    got[0].release()
    pool.close()


def test_views_keep_a_lease_from_ending(local_store):
    pool = BufferPool(local_store, 4096, min_size_class=4096, alignment=4096)
    lease = pool.acquire(4)
    view = lease.buffer
    view[:] = b"test"
    with pytest.raises(RuntimeError, match="exported views"):
        lease.release()
    assert bytes(view) == b"test"  # still the lease's
    del view
    gc.collect()
    lease.release()
    pool.close()


def test_a_dropped_lease_returns_from_its_finalizer(local_store):
    pool = BufferPool(local_store, 4096, min_size_class=4096, alignment=4096, max_regions=1)
    lease = pool.acquire(1)
    del lease
    gc.collect()
    pool.acquire(1, block=False).release()  # its region came back
    pool.close()


def test_close_is_refused_while_leases_are_out(local_store):
    pool = BufferPool(local_store, prewarm_size=1024, prewarm_count=2)
    lease = pool.acquire(1024)
    with pytest.raises(RuntimeError, match="active leases"):
        pool.close()
    lease.release()
    pool.close()
    pool.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        pool.acquire(1)


def test_bad_arguments_are_refused(local_store):
    with pytest.raises(RuntimeError, match="alignment"):
        BufferPool(local_store, 1 << 20, alignment=12345)
    with pytest.raises(RuntimeError, match="positive"):
        BufferPool(local_store, min_size_class=0)
    with pytest.raises(RuntimeError, match="not initialized"):
        BufferPool(None)
    with pytest.raises(RuntimeError, match="not initialized"):
        BufferPool(MooncakeDistributedStore())  # not set up
    pool = BufferPool(local_store)
    with pytest.raises(TypeError):
        pool.acquire(-1)
    with pytest.raises(RuntimeError, match="non-negative"):
        pool.acquire(1, timeout=-1)
    pool.close()


def test_upstream_names():
    import mooncake
    import mooncake.buffer_pool
    import mooncake.store

    assert RegisteredBufferPool is BufferPool
    assert mooncake.BufferPool is mooncake.store.BufferPool is mooncake.buffer_pool.BufferPool
    assert mooncake.RegisteredBufferPool is BufferPool
