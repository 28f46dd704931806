"""yuebing.store.MooncakeDistributedStore against a real cluster (a yuebing-master and two
yuebing-store processes): every method's return convention and its edge cases."""

import threading
import time

import numpy as np
import pytest

from conftest import new_store
from yuebing.store import MooncakeDistributedStore, ReplicateConfig, SoftPinAction

INVALID_PARAMS = -600
OBJECT_NOT_FOUND = -704
OBJECT_HAS_LEASE = -706
RPC_FAIL = -900


def value_for(key: str, n: int) -> bytes:
    seed = abs(hash(key)) % (2**32)
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


# --- setup / close ---------------------------------------------------------------------------


def test_setup_identity_health_and_close(cluster):
    store = MooncakeDistributedStore()
    assert store.health_check() == 1
    assert store.get_hostname() == ""
    assert store.setup("127.0.0.1", "P2PHANDSHAKE", 16 << 20, 16 << 20, "tcp", "",
                       cluster.master_address) == 0
    host, port = store.get_hostname().rsplit(":", 1)
    # No port given: one is picked in 12300..14300, as upstream's store client picks it.
    assert host == "127.0.0.1" and 12300 <= int(port) <= 14300
    assert store.health_check() == 0
    assert store.close() == 0
    assert store.health_check() == 1
    assert store.get_hostname() == ""
    assert store.close() == 0  # idempotent


def test_port_range_comes_from_the_environment_and_a_full_range_falls_back(cluster, monkeypatch):
    import socket

    # Two free ports next to each other inside upstream's range, the one below held by us.
    for low in range(13900, 14200, 2):
        held = socket.socket()
        try:
            held.bind(("127.0.0.1", low))
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", low + 1))
            break
        except OSError:
            held.close()
    else:
        pytest.skip("no two free ports found in 13900..14200")
    held.listen()
    monkeypatch.setenv("MC_STORE_CLIENT_MIN_PORT", str(low))
    monkeypatch.setenv("MC_STORE_CLIENT_MAX_PORT", str(low + 1))
    monkeypatch.setenv("MC_STORE_CLIENT_SETUP_RETRIES", "50")
    stores = []
    try:
        # The held port is taken: the first store gets the other one.
        stores.append(new_store(cluster.master_address))
        assert stores[0].get_hostname() == f"127.0.0.1:{low + 1}"
        # Both taken: where upstream fails the setup, the kernel picks a port.
        stores.append(new_store(cluster.master_address))
        port = int(stores[1].get_hostname().rsplit(":", 1)[1])
        assert port not in (low, low + 1)
        assert stores[1].put("port-fallback", b"1") == 0
        assert stores[0].get("port-fallback") == b"1"
        # A range that is not one is ignored (the default range applies).
        monkeypatch.setenv("MC_STORE_CLIENT_MIN_PORT", "70000")
        stores.append(new_store(cluster.master_address))
        assert 12300 <= int(stores[2].get_hostname().rsplit(":", 1)[1]) <= 14300
        # A port given with the host is used as it is.
        explicit = free_port_outside_range()
        stores.append(new_store(cluster.master_address, local_hostname=f"127.0.0.1:{explicit}"))
        assert stores[3].get_hostname() == f"127.0.0.1:{explicit}"
    finally:
        for s in stores:
            s.close()
        held.close()


def free_port_outside_range() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # the kernel's ephemeral range starts above 14300
        return s.getsockname()[1]


def test_setup_twice_is_refused_and_close_allows_a_new_setup(cluster):
    store = MooncakeDistributedStore()
    args = ("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", cluster.master_address)
    assert store.setup(*args) == 0
    first = store.get_hostname()
    assert store.setup(*args) == INVALID_PARAMS
    assert store.get_hostname() == first  # the first client is untouched
    assert store.init_all("tcp", "", 16 << 20) == INVALID_PARAMS  # upstream's legacy setup too
    assert store.close() == 0
    assert store.setup(*args) == 0
    assert store.put("again", b"1") == 0
    store.close()


def test_setup_dict_form(cluster):
    store = MooncakeDistributedStore()
    assert store.setup({
        "local_hostname": "127.0.0.1",
        "metadata_server": "P2PHANDSHAKE",
        "global_segment_size": "8MB",
        "local_buffer_size": "16 MiB",
        "protocol": "TCP",
        "master_server_addr": cluster.master_address,
    }) == 0
    assert store.put("dict-form", b"ok") == 0
    assert store.get("dict-form") == b"ok"
    store.close()


@pytest.mark.parametrize("config", [
    {},                                                       # nothing
    {"local_hostname": "127.0.0.1"},                          # no metadata_server
    {"metadata_server": "P2PHANDSHAKE"},                      # no local_hostname
    {"local_hostname": "127.0.0.1", "metadata_server": "P2PHANDSHAKE",
     "global_segment_size": "lots"},                          # bad size
    {"local_hostname": "127.0.0.1", "metadata_server": "P2PHANDSHAKE",
     "protocol": "carrier-pigeon"},
    {"local_hostname": "127.0.0.1", "metadata_server": "P2PHANDSHAKE",
     "enable_ssd_offload": "maybe"},
])
def test_setup_dict_errors(config):
    store = MooncakeDistributedStore()
    assert store.setup(config) == INVALID_PARAMS
    assert store.health_check() == 1


def test_setup_positional_errors(cluster):
    master = cluster.master_address
    s = MooncakeDistributedStore()
    assert s.setup("", "P2PHANDSHAKE", 0, 0, "tcp", "", master) == INVALID_PARAMS
    assert s.setup("127.0.0.1", "", 0, 0, "tcp", "", master) == INVALID_PARAMS
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", -1, 0, "tcp", "", master) == INVALID_PARAMS
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, -5, "tcp", "", master) == INVALID_PARAMS
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "udp", "", master) == INVALID_PARAMS
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", "") == INVALID_PARAMS
    assert s.health_check() == 1
    with pytest.raises(TypeError):
        s.setup("127.0.0.1", "P2PHANDSHAKE")  # positional form needs all seven


def test_setup_with_unreachable_master_fails_fast():
    from conftest import free_port

    s = MooncakeDistributedStore()
    start = time.monotonic()
    rc = s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", f"127.0.0.1:{free_port()}")
    assert rc == RPC_FAIL
    assert time.monotonic() - start < 15
    assert s.put("k", b"v") == INVALID_PARAMS


def test_setup_accepts_mooncake_keyword_arguments(cluster):
    from yuebing.engine import TransferEngine

    engine = TransferEngine()
    assert engine.initialize("127.0.0.1", "P2PHANDSHAKE", "tcp", "") == 0
    s = MooncakeDistributedStore()
    # SGLang passes the engine's session id (host:port) and the engine itself.
    assert s.setup(engine.get_session_id(), "P2PHANDSHAKE", 0, 16 << 20, "tcp", "",
                   cluster.master_address, engine.get_engine(), enable_ssd_offload=False,
                   ssd_offload_path="", tenant_id="default", enable_client_http_server=False,
                   client_http_port=9300) == 0
    assert s.put("kw", b"1") == 0
    s.close()


# --- a store that is not set up ---------------------------------------------------------------

NOT_READY_CALLS = [
    ("put", ("k", b"v"), INVALID_PARAMS),
    ("upsert", ("k", b"v"), INVALID_PARAMS),
    ("put_parts", ("k", b"a", b"b"), INVALID_PARAMS),
    ("upsert_parts", ("k", b"a"), INVALID_PARAMS),
    ("put_batch", (["k"], [b"v"]), INVALID_PARAMS),
    ("upsert_batch", (["k"], [b"v"]), INVALID_PARAMS),
    ("put_from", ("k", 4096, 1), INVALID_PARAMS),
    ("upsert_from", ("k", 4096, 1), INVALID_PARAMS),
    ("put_from_with_metadata", ("k", 4096, 4096, 1, 1), INVALID_PARAMS),
    ("batch_put_from", (["k", "j"], [4096, 4096], [1, 1]), [INVALID_PARAMS] * 2),
    ("batch_upsert_from", (["k"], [4096], [1]), [INVALID_PARAMS]),
    ("batch_put_from_multi_buffers", (["k"], [[4096]], [[1]]), [INVALID_PARAMS]),
    ("batch_upsert_from_multi_buffers", (["k"], [[4096]], [[1]]), [INVALID_PARAMS]),
    ("get", ("k",), b""),
    ("get_batch", (["k", "j"],), [b"", b""]),
    ("get_buffer", ("k",), None),
    ("batch_get_buffer", (["k"],), [None]),
    ("get_into", ("k", 4096, 1), INVALID_PARAMS),
    ("batch_get_into", (["k"], [4096], [1]), [INVALID_PARAMS]),
    ("batch_get_into_multi_buffers", (["k"], [[4096]], [[1]]), [INVALID_PARAMS]),
    ("get_into_ranges", ([4096], [["k"]], [[[0]]], [[[0]]], [[[1]]]), [[[INVALID_PARAMS]]]),
    ("batch_get_session_start", (["k", "j"],), [INVALID_PARAMS] * 2),
    ("batch_get_into_multi_buffer_ranges", (["k"], [[4096]], [[1]], [[0]]), [INVALID_PARAMS]),
    ("batch_get_session_end", (["k"],), INVALID_PARAMS),
    ("is_exist", ("k",), INVALID_PARAMS),
    ("batch_is_exist", (["k", "j"],), [INVALID_PARAMS] * 2),
    ("get_size", ("k",), INVALID_PARAMS),
    ("remove", ("k",), INVALID_PARAMS),
    ("remove_by_regex", ("^k",), INVALID_PARAMS),
    ("remove_all", (), INVALID_PARAMS),
    ("batch_remove", (["k"],), [INVALID_PARAMS]),
    ("register_buffer", (4096, 1), INVALID_PARAMS),
    ("unregister_buffer", (4096,), INVALID_PARAMS),
    ("health_check", (), 1),
    ("get_hostname", (), ""),
    ("close", (), 0),
]


@pytest.mark.parametrize("method,args,expected", NOT_READY_CALLS, ids=[c[0] for c in NOT_READY_CALLS])
def test_methods_before_setup_return_codes(method, args, expected):
    # Addresses passed here are never touched: nothing is done without a client.
    store = MooncakeDistributedStore()
    assert getattr(store, method)(*args) == expected


@pytest.mark.parametrize("method,args,expected", NOT_READY_CALLS, ids=[c[0] for c in NOT_READY_CALLS])
def test_methods_after_close_return_codes(cluster, method, args, expected):
    store = MooncakeDistributedStore()
    assert store.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", cluster.master_address) == 0
    assert store.close() == 0
    assert getattr(store, method)(*args) == expected


# --- put / get -----------------------------------------------------------------------------


def test_put_get_round_trip_with_bytes_like_values(store):
    value = value_for("rt", 100_000)
    assert store.put("rt-bytes", value) == 0
    assert store.put("rt-bytearray", bytearray(value)) == 0
    assert store.put("rt-memoryview", memoryview(value)[10:]) == 0
    assert store.put("rt-numpy", np.frombuffer(value, dtype=np.uint8)) == 0
    assert store.get("rt-bytes") == value
    assert store.get("rt-bytearray") == value
    assert store.get("rt-memoryview") == value[10:]
    assert store.get("rt-numpy") == value
    assert isinstance(store.get("rt-bytes"), bytes)


def test_get_miss_returns_empty_bytes(store):
    assert store.get("no-such-key") == b""


def test_put_is_immutable_and_upsert_replaces(store):
    assert store.put("imm", b"first") == 0
    assert store.put("imm", b"second!") == 0  # Mooncake: success, the first value stays
    assert store.get("imm") == b"first"
    assert store.upsert("imm", b"replaced with a longer value") == 0
    assert store.get("imm") == b"replaced with a longer value"
    assert store.get_size("imm") == len(b"replaced with a longer value")
    assert store.upsert("new-by-upsert", b"x") == 0
    assert store.get("new-by-upsert") == b"x"


def test_put_bad_arguments(store):
    assert store.put("empty-value", b"") == INVALID_PARAMS
    assert store.put("", b"value") == INVALID_PARAMS
    assert store.put("k" * 5000, b"value") == INVALID_PARAMS
    with pytest.raises(TypeError):
        store.put("str-value", "not bytes")
    noncontiguous = np.arange(100, dtype=np.uint8)[::2]
    with pytest.raises(TypeError):
        store.put("strided", noncontiguous)
    assert store.is_exist("empty-value") == 0


def test_put_parts(store):
    assert store.put_parts("parts", b"Hello, ", bytearray(b"World"), memoryview(b"!")) == 0
    assert store.get("parts") == b"Hello, World!"
    assert store.put_parts("no-parts") == INVALID_PARAMS
    assert store.put_parts("empty-parts", b"", b"") == INVALID_PARAMS
    assert store.upsert_parts("parts", b"new ", b"value") == 0
    assert store.get("parts") == b"new value"
    rc = ReplicateConfig()
    rc.replica_num = 2
    assert store.put_parts("parts-rc", b"a", b"b", config=rc) == 0
    assert store.get("parts-rc") == b"ab"


def test_put_batch_and_get_batch(store):
    keys = [f"batch-{i}" for i in range(20)]
    values = [value_for(k, 1000 + i) for i, k in enumerate(keys)]
    assert store.put_batch(keys, values) == 0
    assert store.get_batch(keys) == values
    assert store.get_batch(keys[:2] + ["missing"] + keys[2:3]) == \
        values[:2] + [b""] + values[2:3]
    assert store.get_batch([]) == []
    assert store.put_batch([], []) == 0
    assert store.put_batch(["a", "b"], [b"1"]) == INVALID_PARAMS
    assert store.is_exist("a") == 0
    assert store.put_batch(["ok-1", "bad-empty"], [b"1", b""]) == INVALID_PARAMS
    assert store.get("ok-1") == b"1"  # the valid ones are written


def test_upsert_batch(store):
    assert store.put_batch(["ub-1", "ub-2"], [b"old", b"old"]) == 0
    assert store.upsert_batch(["ub-1", "ub-3"], [b"new", b"brand new"]) == 0
    assert store.get_batch(["ub-1", "ub-2", "ub-3"]) == [b"new", b"old", b"brand new"]
    assert store.upsert_batch(["x"], []) == INVALID_PARAMS


def test_large_values(store):
    keys = [f"large-{i}" for i in range(8)]
    values = [value_for(k, 3 << 20) for k in keys]
    assert store.put_batch(keys, values) == 0
    assert store.get_batch(keys) == values


def test_get_buffer(store):
    value = value_for("buf", 50_000)
    assert store.put("buf", value) == 0
    handle = store.get_buffer("buf")
    assert handle is not None
    assert len(handle) == handle.size() == len(value)
    assert handle.ptr() != 0
    assert bytes(memoryview(handle)) == value
    assert np.array_equal(np.array(handle, copy=False), np.frombuffer(value, dtype=np.uint8))
    assert store.get_buffer("missing") is None
    handles = store.batch_get_buffer(["buf", "missing"])
    assert bytes(memoryview(handles[0])) == value and handles[1] is None
    assert store.batch_get_buffer([]) == []


# --- zero-copy forms -----------------------------------------------------------------------


def test_put_from_get_into(store):
    src = np.frombuffer(value_for("pf", 1 << 20), dtype=np.uint8).copy()
    dst = np.zeros(2 << 20, dtype=np.uint8)
    assert store.register_buffer(src.ctypes.data, src.nbytes) == 0
    assert store.register_buffer(dst.ctypes.data, dst.nbytes) == 0
    assert store.put_from("pf", src.ctypes.data, src.nbytes) == 0
    assert store.get_into("pf", dst.ctypes.data, dst.nbytes) == src.nbytes
    assert np.array_equal(dst[:src.nbytes], src)
    assert store.get_into("pf", dst.ctypes.data, src.nbytes - 1) == INVALID_PARAMS  # too small
    assert store.get_into("missing", dst.ctypes.data, dst.nbytes) == OBJECT_NOT_FOUND
    assert store.get_into("pf", 0, 100) == INVALID_PARAMS
    assert store.put_from("null", 0, 100) == INVALID_PARAMS
    assert store.put_from("zero", src.ctypes.data, 0) == INVALID_PARAMS
    assert store.upsert_from("pf", src.ctypes.data, 1000) == 0
    assert store.get_size("pf") == 1000
    assert store.unregister_buffer(src.ctypes.data) == 0
    assert store.unregister_buffer(dst.ctypes.data) == 0


def test_zero_copy_works_without_registration(store):
    src = np.frombuffer(value_for("unreg", 10_000), dtype=np.uint8).copy()
    dst = np.zeros_like(src)
    assert store.put_from("unreg", src.ctypes.data, src.nbytes) == 0
    assert store.get_into("unreg", dst.ctypes.data, dst.nbytes) == src.nbytes
    assert np.array_equal(src, dst)


def test_put_from_with_metadata(store):
    data = np.frombuffer(b"DATA" * 10, dtype=np.uint8).copy()
    meta = np.frombuffer(b"META", dtype=np.uint8).copy()
    assert store.put_from_with_metadata("pfm", data.ctypes.data, meta.ctypes.data, data.nbytes,
                                        meta.nbytes) == 0
    assert store.get("pfm") == b"META" + b"DATA" * 10


def test_batch_put_from_batch_get_into(store):
    n, size = 16, 64 * 1024
    src = np.frombuffer(value_for("bpf", n * size), dtype=np.uint8).copy()
    dst = np.zeros(n * size, dtype=np.uint8)
    keys = [f"bpf-{i}" for i in range(n)]
    src_ptrs = [src.ctypes.data + i * size for i in range(n)]
    dst_ptrs = [dst.ctypes.data + i * size for i in range(n)]
    assert store.register_buffer(src.ctypes.data, src.nbytes) == 0
    assert store.register_buffer(dst.ctypes.data, dst.nbytes) == 0
    assert store.batch_put_from(keys, src_ptrs, [size] * n) == [0] * n
    assert store.batch_get_into(keys, dst_ptrs, [size] * n) == [size] * n
    assert np.array_equal(src, dst)
    # per-key outcomes: a miss and a too-small buffer among hits
    results = store.batch_get_into([keys[0], "missing", keys[1]], dst_ptrs[:3],
                                   [size, size, size - 1])
    assert results == [size, OBJECT_NOT_FOUND, INVALID_PARAMS]
    # mismatched lengths: every key fails, nothing is done
    assert store.batch_get_into(keys[:2], dst_ptrs[:1], [size]) == [INVALID_PARAMS] * 2
    assert store.batch_put_from(["m1", "m2"], src_ptrs[:2], [size]) == [INVALID_PARAMS] * 2
    assert store.is_exist("m1") == 0
    assert store.batch_put_from([], [], []) == []
    assert store.batch_get_into([], [], []) == []
    assert store.batch_upsert_from(keys[:2], src_ptrs[2:4], [size, 10]) == [0, 0]
    assert store.get_size(keys[1]) == 10
    store.unregister_buffer(src.ctypes.data)
    store.unregister_buffer(dst.ctypes.data)


def test_multi_buffer_scatter_gather(store):
    # Each object is written from three pieces and read back into two differently split pieces.
    pieces = [np.frombuffer(value_for(f"mb{i}", n), dtype=np.uint8).copy()
              for i, n in enumerate((1000, 5000, 123))]
    total = sum(p.nbytes for p in pieces)
    keys = ["mb-a", "mb-b"]
    ptrs = [[p.ctypes.data for p in pieces], [pieces[2].ctypes.data, pieces[0].ctypes.data]]
    sizes = [[p.nbytes for p in pieces], [pieces[2].nbytes, pieces[0].nbytes]]
    assert store.batch_put_from_multi_buffers(keys, ptrs, sizes) == [0, 0]
    out1, out2, out3 = (np.zeros(4000, dtype=np.uint8) for _ in range(3))
    read = store.batch_get_into_multi_buffers(
        keys, [[out1.ctypes.data, out2.ctypes.data], [out3.ctypes.data]],
        [[4000, total - 4000], [4000]])
    assert read == [total, pieces[2].nbytes + pieces[0].nbytes]
    whole = b"".join(p.tobytes() for p in pieces)
    assert bytes(out1) + bytes(out2[:total - 4000]) == whole
    assert bytes(out3[:read[1]]) == pieces[2].tobytes() + pieces[0].tobytes()
    assert store.get("mb-a") == whole
    # an inner length mismatch fails the call
    assert store.batch_put_from_multi_buffers(["mb-c"], [[pieces[0].ctypes.data]],
                                              [[1, 2]]) == [INVALID_PARAMS]
    assert store.batch_get_into_multi_buffers(["mb-a"], [[out1.ctypes.data]],
                                              [[10]]) == [INVALID_PARAMS]  # too small
    assert store.batch_upsert_from_multi_buffers(["mb-a"], [[pieces[2].ctypes.data]],
                                                 [[pieces[2].nbytes]]) == [0]
    assert store.get("mb-a") == pieces[2].tobytes()


def test_register_buffer_edge_cases(store):
    buf = np.zeros(1 << 20, dtype=np.uint8)
    addr = buf.ctypes.data
    assert store.register_buffer(addr, buf.nbytes) == 0
    assert store.register_buffer(addr, buf.nbytes) == INVALID_PARAMS  # duplicate
    assert store.register_buffer(addr + 4096, 4096) == INVALID_PARAMS  # overlapping
    assert store.register_buffer(0, 4096) == INVALID_PARAMS
    assert store.register_buffer(addr, 0) == INVALID_PARAMS
    assert store.unregister_buffer(addr) == 0
    assert store.unregister_buffer(addr) == INVALID_PARAMS  # not registered any more
    assert store.unregister_buffer(12345) == INVALID_PARAMS


# --- existence, sizes, removal ----------------------------------------------------------------


def test_is_exist_and_get_size(store):
    assert store.put("exists", b"12345") == 0
    assert store.is_exist("exists") == 1
    assert store.is_exist("does-not") == 0
    assert store.is_exist("") == INVALID_PARAMS
    assert store.batch_is_exist(["exists", "does-not", ""]) == [1, 0, INVALID_PARAMS]
    assert store.batch_is_exist([]) == []
    assert store.get_size("exists") == 5
    assert store.get_size("does-not") == OBJECT_NOT_FOUND


def test_remove(store):
    assert store.put("rm", b"x") == 0
    assert store.remove("rm") == 0
    assert store.is_exist("rm") == 0
    assert store.get("rm") == b""
    assert store.remove("rm") == OBJECT_NOT_FOUND
    assert store.remove("") == INVALID_PARAMS


def test_a_finished_read_ends_its_lease_so_remove_works_at_once(store):
    # Upstream's leases last default_kv_lease_ttl after a get; ours end when the read is over
    # (the release rides along with the next call), so a plain remove succeeds right away.
    assert store.put("leased", b"x" * 1000) == 0
    assert store.get("leased") == b"x" * 1000
    assert store.remove("leased") == 0
    assert store.is_exist("leased") == 0
    assert store.put("forced", b"y" * 1000) == 0
    assert store.remove("forced", force=True) == 0
    assert store.remove("forced") == OBJECT_NOT_FOUND


def test_churn_of_more_than_the_capacity_within_one_lease_never_runs_out_of_space(
        private_cluster):
    # put, read and remove 2.5 x a 32 MB store in 2 MiB objects, far quicker than the master's
    # 10 s lease: every put finds room because each read's lease ended with the read.
    cluster = private_cluster(stores=1, store_size="32MB")
    store = new_store(cluster.master_address)
    try:
        value = bytes(range(256)) * (8 << 10)  # 2 MiB
        for i in range(40):
            key = f"churn-{i}"
            assert store.put(key, value) == 0, f"put {i} refused"
            assert store.get(key) == value
            assert store.remove(key) == 0
    finally:
        store.close()


def test_batch_remove(store):
    assert store.put_batch(["br-1", "br-2"], [b"1", b"2"]) == 0
    assert store.batch_remove(["br-1", "missing", "br-2"]) == [0, OBJECT_NOT_FOUND, 0]
    assert store.batch_is_exist(["br-1", "br-2"]) == [0, 0]
    assert store.batch_remove([]) == []
    assert store.put("br-3", b"3") == 0
    assert store.get("br-3") == b"3"
    assert store.batch_remove(["br-3"], force=True) == [0]


def test_remove_by_regex_and_remove_all(store):
    keys = [f"user_session_{i}" for i in range(5)] + ["other_1", "other_2"]
    assert store.put_batch(keys, [b"v"] * len(keys)) == 0
    assert store.remove_by_regex("^user_session_.*") == 5
    assert store.batch_is_exist(keys) == [0] * 5 + [1, 1]
    assert store.remove_by_regex("^nothing-matches$") == 0
    assert store.remove_by_regex("(unclosed") < 0
    assert store.remove_all() == 2
    assert store.remove_all() == 0


# --- replication config ---------------------------------------------------------------------


def test_replicate_config_fields():
    rc = ReplicateConfig()
    assert rc.replica_num == 1 and not rc.with_soft_pin and not rc.with_hard_pin
    assert rc.preferred_segment == "" and rc.preferred_segments == []
    assert rc.soft_pin_action == SoftPinAction.PRESERVE
    rc.replica_num = 3
    rc.with_hard_pin = True
    rc.preferred_segment = "127.0.0.1:1234"
    assert "replica_num=3" in str(rc)


def test_replication_and_pins(store):
    rc = ReplicateConfig()
    rc.replica_num = 2
    assert store.put("two-replicas", b"rr", rc) == 0
    assert store.get("two-replicas") == b"rr"
    rc.replica_num = 10  # more than there are segments: best effort
    assert store.put("many-replicas", b"mm", rc) == 0
    assert store.get("many-replicas") == b"mm"
    for bad in (0, -1):
        rc.replica_num = bad
        assert store.put("bad-rc", b"x", rc) == INVALID_PARAMS
        assert store.put_batch(["bad-rc"], [b"x"], rc) == INVALID_PARAMS
    pinned = ReplicateConfig()
    pinned.with_hard_pin = True
    assert store.put("hard", b"h", pinned) == 0
    soft = ReplicateConfig()
    soft.soft_pin_action = SoftPinAction.ENABLE
    assert store.put("soft", b"s", soft) == 0
    assert store.get_batch(["hard", "soft"]) == [b"h", b"s"]


def test_soft_pin_ttl_is_optional_and_needs_enable(store):
    rc = ReplicateConfig()
    assert rc.soft_pin_ttl_ms is None  # the master's default
    rc.soft_pin_ttl_ms = 1500
    assert rc.soft_pin_ttl_ms == 1500
    rc.soft_pin_ttl_ms = None
    assert rc.soft_pin_ttl_ms is None
    for bad in (-1, 1 << 64, "10"):
        with pytest.raises(TypeError):
            rc.soft_pin_ttl_ms = bad
    assert rc.soft_pin_ttl_ms is None  # a refused value leaves the field as it was
    # A TTL only goes with ENABLE; with PRESERVE or DISABLE the write is refused, nothing stored.
    for action in (SoftPinAction.PRESERVE, SoftPinAction.DISABLE):
        refused = ReplicateConfig()
        refused.soft_pin_action = action
        refused.soft_pin_ttl_ms = 1000
        assert store.put("ttl-refused", b"t", refused) == INVALID_PARAMS
        assert store.upsert("ttl-refused", b"t", refused) == INVALID_PARAMS
        assert store.put_batch(["ttl-refused"], [b"t"], refused) == INVALID_PARAMS
    assert store.is_exist("ttl-refused") == 0
    enabled = ReplicateConfig()
    enabled.soft_pin_action = SoftPinAction.ENABLE
    enabled.soft_pin_ttl_ms = 1000
    assert store.put("ttl-enabled", b"e", enabled) == 0
    assert store.upsert("ttl-enabled", b"E", enabled) == 0
    assert store.get("ttl-enabled") == b"E"
    # Longer than the master's max_kv_soft_pin_ttl (24 h by default): the master refuses it.
    enabled.soft_pin_ttl_ms = 24 * 3600 * 1000 + 1
    assert store.put("ttl-too-long", b"t", enabled) == INVALID_PARAMS
    assert store.put_batch(["ttl-too-long"], [b"t"], enabled) == INVALID_PARAMS
    assert store.is_exist("ttl-too-long") == 0
    enabled.soft_pin_ttl_ms = 24 * 3600 * 1000
    assert store.put("ttl-longest", b"t", enabled) == 0


def test_preferred_segment_places_the_replica(cluster, make_store):
    # An object put with a preferred segment on a client that is then closed is gone with it:
    # that shows where the replica was.
    owner, reader = make_store(segment=16 << 20), make_store()
    reader.remove_all(True)
    rc = ReplicateConfig()
    rc.preferred_segment = owner.get_hostname()
    assert owner.put("on-owner", b"o" * 5000, rc) == 0
    same_node = ReplicateConfig()
    same_node.prefer_alloc_in_same_node = True
    assert owner.put("on-owner-too", b"p" * 5000, same_node) == 0
    assert reader.get("on-owner") == b"o" * 5000
    owner.close()
    assert reader.is_exist("on-owner") == 0
    assert reader.is_exist("on-owner-too") == 0
    assert reader.get("on-owner") == b""


# --- several clients and threads ------------------------------------------------------------


def test_two_clients_share_objects(make_store):
    a, b = make_store(), make_store(segment=16 << 20)
    a.remove_all(True)
    assert a.put("shared", b"from a") == 0
    assert b.get("shared") == b"from a"
    assert b.is_exist("shared") == 1
    assert b.put("shared", b"from b") == 0  # already exists: kept
    assert a.get("shared") == b"from a"
    assert b.upsert("shared", b"from b") == 0
    assert a.get("shared") == b"from b"
    assert b.remove("shared", force=True) == 0
    assert a.get("shared") == b""


def test_objects_of_a_closed_client_survive_on_store_servers(make_store):
    writer = make_store(segment=0)  # contributes no memory: replicas go to the store servers
    reader = make_store()
    writer.remove_all(True)
    assert writer.put("outlives-writer", b"still here") == 0
    writer.close()
    assert reader.get("outlives-writer") == b"still here"


def test_many_threads_on_one_store(store):
    errors = []

    def worker(t):
        for i in range(30):
            key = f"thr-{t}-{i}"
            value = value_for(key, 1000 + 37 * i)
            rc = store.put(key, value)
            if rc != 0:
                errors.append(("put", key, rc))
            if store.get(key) != value:
                errors.append(("get", key))
            if store.is_exist(key) != 1:
                errors.append(("exist", key))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_gil_is_released_during_io(store):
    # While one thread moves 32 MiB at a time through the store, another Python thread keeps
    # running.
    keys = [f"gil-{i}" for i in range(16)]
    values = [bytes([i]) * (2 << 20) for i in range(16)]
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        start = time.monotonic()
        for _ in range(3):
            assert store.upsert_batch(keys, values) == 0
            assert store.get_batch(keys) == values
        elapsed = time.monotonic() - start
    finally:
        done.set()
        t.join()
    during = [x for x in ticks if start <= x <= start + elapsed]
    # With the GIL held for the whole I/O the ticker could run only between calls.
    assert len(during) >= min(10, elapsed / 0.01)


def test_close_while_other_threads_use_the_store(make_store):
    s = make_store()
    stop = threading.Event()
    seen = []  # (monotonic time the put started, its result)

    def worker(t):
        i = 0
        while not stop.is_set():
            started = time.monotonic()
            rc = s.put(f"race-{t}-{i}", b"v" * 2048)
            seen.append((started, rc))
            s.get(f"race-{t}-{i}")
            s.batch_is_exist([f"race-{t}-{i}"])
            i += 1

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    assert s.close() == 0
    closed_at = time.monotonic()
    time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join()
    assert {rc for _, rc in seen} <= {0, INVALID_PARAMS}
    # Every put that began after close() returned was refused (and none crashed the process).
    after = [rc for started, rc in seen if started > closed_at]
    assert after, "no put ran after close()"
    assert set(after) == {INVALID_PARAMS}


def test_stats_extension(store):
    assert store.put("stat", b"1") == 0
    store.get("stat")
    store.get("stat-miss")
    stats = store.stats()
    assert stats["hits"] >= 1 and stats["misses"] >= 1 and stats["checksum_failures"] == 0


def test_context_manager_closes(cluster):
    with MooncakeDistributedStore() as s:
        assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", cluster.master_address) == 0
    assert s.health_check() == 1


# --- failures of the cluster ----------------------------------------------------------------


def test_master_death_gives_errors_not_hangs(private_cluster):
    import signal

    c = private_cluster(stores=1)
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", c.master_address) == 0
    assert s.put("before", b"1") == 0
    c.master.stop(signal.SIGKILL)
    start = time.monotonic()
    assert s.put("after", b"1") < 0
    assert s.get("before") == b""
    assert s.is_exist("before") < 0
    assert s.health_check() == 2
    assert time.monotonic() - start < 60
    assert s.close() == 0


@pytest.mark.parametrize("shm", ["1", "0"], ids=["shm", "tcp"])
def test_store_server_death_never_gives_wrong_bytes(private_cluster, monkeypatch, shm):
    import signal

    # With shared memory the dead server's segment is still mapped here, so its bytes (checked
    # against the checksum of the put) may still be served; over TCP the read fails. Either way
    # the result is the exact value or a miss/error, and it comes back promptly.
    monkeypatch.setenv("YUEBING_ENABLE_SHM", shm)
    c = private_cluster(stores=1)
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", c.master_address) == 0
    value = value_for("on-dead-store", 10_000)
    assert s.put("on-dead-store", value) == 0
    c.stores[0].stop(signal.SIGKILL)
    start = time.monotonic()
    got = s.get("on-dead-store")
    buf = np.zeros(10_000, dtype=np.uint8)
    read = s.get_into("on-dead-store", buf.ctypes.data, buf.nbytes)
    assert time.monotonic() - start < 60
    if shm == "0":
        assert got == b"" and read < 0
    else:
        assert got in (b"", value)
        assert read < 0 or (read == len(value) and buf.tobytes() == value)
    s.close()
