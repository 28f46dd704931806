"""yuebing.engine.TransferEngine: Mooncake's Python transfer engine API, two engines in one
process (P2PHANDSHAKE, no servers needed)."""

import subprocess
import sys
import threading

import numpy as np
import pytest

from yuebing.engine import TransferEngine, TransferNotify, TransferOpcode

ERR_INVALID_ARGUMENT = -1
ERR_ADDRESS_NOT_REGISTERED = -3
ERR_ADDRESS_OVERLAPPED = -7


def new_engine():
    engine = TransferEngine()
    assert engine.initialize("127.0.0.1", "P2PHANDSHAKE", "tcp", "") == 0
    return engine


@pytest.fixture
def pair():
    """(initiator, target, target buffer registered on the target)."""
    initiator, target = new_engine(), new_engine()
    remote = np.zeros(4 << 20, dtype=np.uint8)
    assert target.register_memory(remote.ctypes.data, remote.nbytes) == 0
    yield initiator, target, remote
    target.unregister_memory(remote.ctypes.data)


def pattern(n, seed=1):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def test_initialize_and_identity():
    engine = TransferEngine()
    assert engine.get_rpc_port() == -1
    assert engine.get_session_id() == ""
    assert engine.initialize("127.0.0.1", "P2PHANDSHAKE", "tcp", "") == 0
    port = engine.get_rpc_port()
    assert 0 < port < 65536
    assert engine.get_session_id() == f"127.0.0.1:{port}"
    assert engine.get_hostname() == engine.get_session_id()
    assert engine.get_engine() is engine
    assert engine.get_engine_ptr() != 0


def test_initialize_errors():
    engine = new_engine()
    assert engine.initialize("127.0.0.1", "P2PHANDSHAKE", "tcp", "") == -1  # twice
    assert TransferEngine().initialize("127.0.0.1", "P2PHANDSHAKE", "carrier-pigeon", "") == -1
    assert TransferEngine().initialize("127.0.0.1", "bogus://x", "tcp", "") == -1
    assert TransferEngine().initialize("", "P2PHANDSHAKE", "tcp", "") == -1


def test_protocol_is_case_insensitive_and_rdma_falls_back():
    assert TransferEngine().initialize("127.0.0.1", "P2PHANDSHAKE", "TCP", "") == 0
    assert TransferEngine().initialize("127.0.0.1", "P2PHANDSHAKE", "rdma", "mlx5_0") == 0


def test_given_port_is_used():
    from conftest import free_port

    port = free_port()
    engine = TransferEngine()
    assert engine.initialize(f"127.0.0.1:{port}", "P2PHANDSHAKE", "tcp", "") == 0
    assert engine.get_rpc_port() == port
    assert TransferEngine().initialize(f"127.0.0.1:{port}", "P2PHANDSHAKE", "tcp", "") == -1


def test_methods_before_initialize_fail_cleanly():
    engine = TransferEngine()
    buf = np.zeros(64, dtype=np.uint8)
    addr = buf.ctypes.data
    assert engine.register_memory(addr, 64) == ERR_INVALID_ARGUMENT
    assert engine.unregister_memory(addr) == ERR_INVALID_ARGUMENT
    assert engine.batch_register_memory([addr], [64]) == ERR_INVALID_ARGUMENT
    assert engine.transfer_sync_write("127.0.0.1:1", addr, 0, 64) == -1
    assert engine.transfer_sync_read("127.0.0.1:1", addr, 0, 64) == -1
    assert engine.batch_transfer_sync_write("127.0.0.1:1", [addr], [0], [64]) == -1
    assert engine.transfer_submit_write("127.0.0.1:1", addr, 0, 64) == 0
    assert engine.batch_transfer_async_read("127.0.0.1:1", [addr], [0], [64]) == 0
    assert engine.transfer_check_status(1) == -1
    assert engine.get_batch_transfer_status([1]) == -1
    assert engine.allocate_managed_buffer(4096) == 0
    assert engine.send_probe("127.0.0.1:1") == -1


def test_sync_write_then_read(pair):
    initiator, target, remote = pair
    data = pattern(1 << 20)
    assert initiator.transfer_sync_write(target.get_session_id(), data.ctypes.data,
                                         remote.ctypes.data + 4096, data.nbytes) == 0
    assert np.array_equal(remote[4096:4096 + data.nbytes], data)
    back = np.zeros_like(data)
    assert initiator.transfer_sync_read(target.get_session_id(), back.ctypes.data,
                                        remote.ctypes.data + 4096, back.nbytes) == 0
    assert np.array_equal(back, data)


def test_transfer_sync_with_opcode_and_notify(pair):
    initiator, target, remote = pair
    data = pattern(1000, seed=2)
    notify = TransferNotify("n", "m")
    assert (notify.name, notify.msg) == ("n", "m")
    assert initiator.transfer_sync(target.get_session_id(), data.ctypes.data, remote.ctypes.data,
                                   data.nbytes, TransferOpcode.Write, notify) == 0
    back = np.zeros_like(data)
    assert initiator.transfer_sync(target.get_session_id(), back.ctypes.data, remote.ctypes.data,
                                   back.nbytes, TransferEngine.TransferOpcode.Read) == 0
    assert np.array_equal(back, data)
    assert initiator.get_notifies() == []
    assert int(TransferOpcode.Read) == 0 and int(TransferOpcode.Write) == 1


def test_batch_sync_scatter_gather(pair):
    initiator, target, remote = pair
    chunks = [pattern(n, seed=n) for n in (1, 4096, 100_000, 1 << 20)]
    offsets = [0, 8, 8192, 200_000]
    session = target.get_session_id()
    assert initiator.batch_transfer_sync_write(
        session, [c.ctypes.data for c in chunks], [remote.ctypes.data + o for o in offsets],
        [c.nbytes for c in chunks]) == 0
    for c, o in zip(chunks, offsets):
        assert np.array_equal(remote[o:o + c.nbytes], c)
    backs = [np.zeros_like(c) for c in chunks]
    assert initiator.batch_transfer_sync_read(
        session, [b.ctypes.data for b in backs], [remote.ctypes.data + o for o in offsets],
        [b.nbytes for b in backs]) == 0
    assert all(np.array_equal(b, c) for b, c in zip(backs, chunks))
    assert initiator.batch_transfer_sync(session, [backs[0].ctypes.data],
                                        [remote.ctypes.data], [1], TransferOpcode.Read) == 0


def test_batch_sync_argument_errors(pair):
    initiator, target, remote = pair
    session = target.get_session_id()
    buf = np.zeros(16, dtype=np.uint8)
    assert initiator.batch_transfer_sync_write(session, [buf.ctypes.data], [], [16]) == -1
    assert initiator.batch_transfer_sync_write(session, [], [], []) == 0
    assert initiator.transfer_sync_write(session, buf.ctypes.data, remote.ctypes.data, 0) == -1
    assert initiator.batch_transfer_async_write(session, [], [], []) == 0


def test_submit_write_and_check_status(pair):
    initiator, target, remote = pair
    data = pattern(2 << 20, seed=3)
    batch = initiator.transfer_submit_write(target.get_session_id(), data.ctypes.data,
                                            remote.ctypes.data, data.nbytes)
    assert batch != 0
    for _ in range(100_000):
        status = initiator.transfer_check_status(batch)
        if status != 0:
            break
    assert status == 1
    assert np.array_equal(remote[:data.nbytes], data)
    assert initiator.transfer_check_status(batch) == -1  # freed once completed
    assert initiator.transfer_check_status(123456789) == -1


def test_async_batches_and_status(pair):
    initiator, target, remote = pair
    session = target.get_session_id()
    a, b = pattern(300_000, seed=4), pattern(300_000, seed=5)
    w1 = initiator.batch_transfer_async_write(session, [a.ctypes.data], [remote.ctypes.data],
                                              [a.nbytes])
    w2 = initiator.batch_transfer_async(session, [b.ctypes.data],
                                        [remote.ctypes.data + 1_000_000], [b.nbytes],
                                        TransferOpcode.Write)
    assert w1 != 0 and w2 != 0 and w1 != w2
    assert initiator.get_batch_transfer_status([w1, w2]) == 0
    back = np.zeros(300_000, dtype=np.uint8)
    r = initiator.batch_transfer_async_read(session, [back.ctypes.data],
                                            [remote.ctypes.data + 1_000_000], [back.nbytes])
    assert initiator.get_batch_transfer_status([r]) == 0
    assert np.array_equal(back, b) and np.array_equal(remote[:a.nbytes], a)
    assert initiator.get_batch_transfer_status([r]) == -1  # already freed


def test_unregistered_peer_memory_is_refused(pair):
    initiator, target, remote = pair
    outside = np.zeros(4096, dtype=np.uint8)  # never registered on the target
    data = pattern(4096, seed=6)
    session = target.get_session_id()
    assert initiator.transfer_sync_write(session, data.ctypes.data, outside.ctypes.data,
                                         4096) == -1
    assert not outside.any()
    # A range running past the end of the registered buffer is refused as a whole.
    assert initiator.transfer_sync_write(session, data.ctypes.data,
                                         remote.ctypes.data + remote.nbytes - 100, 4096) == -1


def test_unknown_peer_fails_fast():
    engine = new_engine()
    buf = np.zeros(64, dtype=np.uint8)
    from conftest import free_port

    dead = f"127.0.0.1:{free_port()}"
    assert engine.transfer_sync_write(dead, buf.ctypes.data, 0, 64) == -1
    assert engine.transfer_submit_write(dead, buf.ctypes.data, 0, 64) == 0
    assert engine.send_probe(dead) == -1


def test_get_first_buffer_address(pair):
    initiator, target, remote = pair
    session = target.get_session_id()
    # As upstream: the address a peer writes to, read from the segment's descriptor.
    assert initiator.get_first_buffer_address(session) == remote.ctypes.data
    assert target.get_first_buffer_address(session) == remote.ctypes.data  # its own segment
    lower = np.zeros(4096, dtype=np.uint8)
    higher = np.zeros(4096, dtype=np.uint8)
    other = new_engine()
    first, second = sorted([lower, higher], key=lambda a: a.ctypes.data)
    assert other.register_memory(second.ctypes.data, second.nbytes) == 0
    assert other.register_memory(first.ctypes.data, first.nbytes) == 0
    assert initiator.get_first_buffer_address(other.get_session_id()) == first.ctypes.data
    assert other.unregister_memory(first.ctypes.data) == 0
    assert other.unregister_memory(second.ctypes.data) == 0
    # No buffers, an unreachable peer, or no engine: 0.
    assert initiator.get_first_buffer_address(other.get_session_id()) == 0
    from conftest import free_port

    assert initiator.get_first_buffer_address(f"127.0.0.1:{free_port()}") == 0
    assert TransferEngine().get_first_buffer_address(session) == 0


def test_send_probe(pair):
    initiator, target, _ = pair
    assert initiator.send_probe(target.get_session_id()) == 0


def test_send_probe_reports_a_peer_that_died_after_it_was_reached():
    # The peer is another process; after the initiator reached it (and cached its segment), the
    # process is killed: the probe must contact the peer, not trust the cached handle.
    code = ("import sys\n"
            "from yuebing.engine import TransferEngine\n"
            "e = TransferEngine()\n"
            "assert e.initialize('127.0.0.1', 'P2PHANDSHAKE', 'tcp', '') == 0\n"
            "print(e.get_session_id(), flush=True)\n"
            "sys.stdin.read()\n")
    peer = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    engine = new_engine()
    try:
        session = peer.stdout.readline().strip()
        assert session
        assert engine.send_probe(session) == 0
        engine.get_first_buffer_address(session)  # opens and caches the peer's segment
    finally:
        peer.kill()
        peer.wait(timeout=10)
    assert engine.send_probe(session) == -1


def test_registration_codes():
    engine = new_engine()
    buf = np.zeros(1 << 16, dtype=np.uint8)
    addr = buf.ctypes.data
    assert engine.register_memory(addr, buf.nbytes) == 0
    assert engine.register_memory(addr, buf.nbytes) == ERR_ADDRESS_OVERLAPPED
    assert engine.register_memory(addr + 100, 100) == ERR_ADDRESS_OVERLAPPED
    assert engine.unregister_memory(addr) == 0
    assert engine.unregister_memory(addr) == ERR_ADDRESS_NOT_REGISTERED
    assert engine.register_memory(0, 100) == ERR_INVALID_ARGUMENT
    assert engine.register_memory(addr, 0) == ERR_INVALID_ARGUMENT
    assert engine.register_memory(addr, buf.nbytes, "cpu:0") == 0
    assert engine.unregister_memory(addr) == 0


def test_batch_registration_is_all_or_nothing():
    engine = new_engine()
    a, b = np.zeros(4096, dtype=np.uint8), np.zeros(4096, dtype=np.uint8)
    assert engine.batch_register_memory([a.ctypes.data], [4096, 1]) == ERR_INVALID_ARGUMENT
    assert engine.register_memory(b.ctypes.data, 4096) == 0
    assert engine.batch_register_memory([a.ctypes.data, b.ctypes.data],
                                        [4096, 4096]) == ERR_ADDRESS_OVERLAPPED
    assert engine.register_memory(a.ctypes.data, 4096) == 0  # the first was rolled back
    assert engine.batch_unregister_memory([a.ctypes.data, b.ctypes.data]) == 0
    assert engine.batch_register_memory([a.ctypes.data, b.ctypes.data], [4096, 4096]) == 0
    assert engine.batch_unregister_memory([a.ctypes.data, b.ctypes.data]) == 0


def test_managed_buffers_and_byte_helpers():
    initiator, target = new_engine(), new_engine()
    addr = target.allocate_managed_buffer(1 << 20)
    assert addr != 0
    assert target.write_bytes_to_buffer(addr, b"hello world", 11) == 0
    assert target.read_bytes_from_buffer(addr, 5) == b"hello"
    assert target.write_bytes_to_buffer(addr, b"abc", 10) == -1  # longer than the source
    # Managed buffers are registered: a peer can write them.
    data = pattern(1 << 20, seed=7)
    assert initiator.transfer_sync_write(target.get_session_id(), data.ctypes.data, addr,
                                         data.nbytes) == 0
    assert target.read_bytes_from_buffer(addr, data.nbytes) == data.tobytes()
    assert target.free_managed_buffer(addr, 1 << 20) == 0
    assert target.free_managed_buffer(addr, 1 << 20) == -1
    assert target.allocate_managed_buffer(0) == 0


def test_many_threads_share_one_engine(pair):
    initiator, target, remote = pair
    session = target.get_session_id()
    errors = []
    slot = 256 * 1024

    def worker(i):
        data = pattern(slot, seed=100 + i)
        back = np.zeros_like(data)
        for _ in range(20):
            if initiator.transfer_sync_write(session, data.ctypes.data,
                                             remote.ctypes.data + i * slot, slot) != 0:
                errors.append(("write", i))
            if initiator.transfer_sync_read(session, back.ctypes.data,
                                            remote.ctypes.data + i * slot, slot) != 0:
                errors.append(("read", i))
            if not np.array_equal(back, data):
                errors.append(("bytes", i))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_module_flags():
    import yuebing.engine as e

    assert e.SUPPORT_CUDA is False and e.SUPPORT_EFA is False
