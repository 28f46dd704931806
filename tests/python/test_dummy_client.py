"""The real/dummy client split: `yuebing-client` (upstream's `mooncake_client`) and
`MooncakeDistributedStore.setup_dummy`, with real processes on 127.0.0.1.

The real client owns the memory lent to the cluster; dummies join through it and lend none. A
dummy that dies loses nothing; a real client that dies gives the dummies errors for what its
segment held, never a crash or a hang.
"""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import free_port, start_real_client

@pytest.fixture
def real_client(private_cluster):
    """A master with no store processes and one real client: its segment is the only memory."""
    cluster = private_cluster(stores=0)
    rc = start_real_client(cluster.master_address)
    yield rc
    rc.proc.stop()


@pytest.fixture
def dummies():
    made = []

    def make(address: str, mem_pool_size: int = 64 << 20, local_buffer_size: int = 16 << 20):
        from yuebing.store import MooncakeDistributedStore

        store = MooncakeDistributedStore()
        assert store.setup_dummy(mem_pool_size, local_buffer_size, address) == 0
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


def test_dummies_share_the_real_clients_memory(real_client, dummies):
    a, b = dummies(real_client.address), dummies(real_client.address)
    assert a.put("dummy-a", b"from a" * 1000) == 0
    assert b.get("dummy-a") == b"from a" * 1000
    # The dummies lend nothing: the only segment, where every replica lands, is the real client's.
    (replica,) = b.get_replica_desc("dummy-a")
    assert (replica.get_memory_descriptor().buffer_descriptor.transport_endpoint
            == real_client.segment)
    assert a.get_hostname() != real_client.segment and b.get_hostname() != real_client.segment


def test_zero_copy_through_memory_from_the_pool(real_client, dummies):
    a, b = dummies(real_client.address), dummies(real_client.address)
    size, n = 256 << 10, 4
    src, dst = a.alloc_from_mem_pool(size * n), b.alloc_from_mem_pool(size * n)
    assert src and dst and src % 4096 == 0
    assert a.register_buffer(src, size * n) == 0 and b.register_buffer(dst, size * n) == 0
    for i in range(n):
        ctypes.memset(src + i * size, 0x41 + i, size)
    keys = [f"zc-{i}" for i in range(n)]
    assert a.batch_put_from(keys, [src + i * size for i in range(n)], [size] * n) == [0] * n
    got = b.batch_get_into(keys + ["zc-missing"], [dst + i * size for i in range(n)] + [dst],
                           [size] * (n + 1))
    assert got[:n] == [size] * n and got[n] < 0
    assert ctypes.string_at(dst, size * n) == ctypes.string_at(src, size * n)
    assert a.alloc_from_mem_pool(0) == 0


DUMMY_THAT_DIES = textwrap.dedent("""
    import os, signal, sys
    from yuebing.store import MooncakeDistributedStore
    s = MooncakeDistributedStore()
    assert s.setup_dummy(1 << 20, 16 << 20, sys.argv[1]) == 0
    for i in range(20):
        assert s.put(f"orphan-{i}", bytes([i]) * 4096) == 0
    print("put done", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
""")


def test_a_dummy_that_dies_loses_nothing(real_client, dummies):
    child = subprocess.run([sys.executable, "-c", DUMMY_THAT_DIES, real_client.address],
                           capture_output=True, text=True, timeout=60)
    assert child.returncode == -signal.SIGKILL and "put done" in child.stdout, child.stderr
    reader = dummies(real_client.address)
    for i in range(20):
        assert reader.get(f"orphan-{i}") == bytes([i]) * 4096


def test_a_real_client_that_dies_gives_errors_not_hangs(real_client, dummies):
    a = dummies(real_client.address)
    assert a.put("on-the-real-client", b"x" * 4096) == 0
    real_client.proc.stop(signal.SIGKILL)
    start = time.monotonic()
    # Its segment held the only copy and the only memory: a read and a put fail, within the
    # calls' deadlines, and the dummy stays usable (no crash, no exception).
    assert a.get("on-the-real-client") == b""
    assert a.put("after-the-real-client", b"y" * 4096) < 0
    assert a.is_exist("never-there") == 0  # the master still answers
    assert time.monotonic() - start < 60
    # A new dummy cannot join through a real client that is gone.
    from yuebing.store import MooncakeDistributedStore

    late = MooncakeDistributedStore()
    start = time.monotonic()
    assert late.setup_dummy(1 << 20, 16 << 20, real_client.address) == -900
    assert time.monotonic() - start < 10


def test_setup_dummy_rejects_bad_arguments(real_client, dummies):
    from yuebing.store import MooncakeDistributedStore

    s = MooncakeDistributedStore()
    assert s.setup_dummy(1 << 20, 16 << 20, "no-port") == -600
    assert s.setup_dummy(-1, 16 << 20, real_client.address) == -600
    assert s.setup_dummy(1 << 20, 16 << 20, f"127.0.0.1:{free_port()}") == -900
    d = dummies(real_client.address)
    assert d.setup_dummy(1 << 20, 16 << 20, real_client.address) == -600  # already set up


@pytest.mark.parametrize("flag", ["--port=0", "--global_segment_size=0", "--no_such_flag=1",
                                  "--enable_offload=maybe"])
def test_real_client_refuses_bad_flags(flag):
    done = subprocess.run([sys.executable, "-m", "yuebing.real_client", flag],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "error" in done.stderr


def test_real_client_accepts_upstreams_no_effect_flags():
    from yuebing.real_client import parse_arguments
    args = parse_arguments(["--threads=4", "--start_offload_rpc_server=false", "--log_dir=/tmp",
                            "--use_mmap_arena_allocator", "--mmap_arena_pool_size=1073741824"])
    assert args.use_mmap_arena_allocator is True and args.mmap_arena_pool_size == 1 << 30


def test_real_client_exits_when_the_master_is_unreachable():
    done = subprocess.run([sys.executable, "-m", "yuebing.real_client", "--host=127.0.0.1",
                           f"--port={free_port()}", "--metadata_server=P2PHANDSHAKE",
                           f"--master_server_address=127.0.0.1:{free_port()}",
                           "--global_segment_size=16MB"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "store setup failed" in done.stderr


def test_real_client_stops_on_sigterm_even_if_started_with_it_blocked(private_cluster):
    # A parent that blocks SIGTERM (some launchers and shells do) passes the mask on: the real
    # client unblocks it, unmounts its segment and exits 0.
    cluster = private_cluster(stores=0)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "yuebing.real_client", "--host=127.0.0.1", f"--port={port}",
         f"--master_server_address={cluster.master_address}", "--metadata_server=P2PHANDSHAKE",
         "--global_segment_size=16MB"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM}))
    try:
        for line in proc.stdout:  # bounded by the Popen's own output: it ends if the child dies
            if "yuebing-client ready" in line:
                break
        else:
            pytest.fail("the real client exited before it was ready")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
