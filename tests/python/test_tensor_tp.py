"""Tensor-parallel zero-copy forms (get_tensor_with_tp_into, put_tensor_with_tp_from and their
batch forms), upsert_tensor_from and the safetensors helpers, on a real cluster (skipped when
torch is not installed)."""

import asyncio
import ctypes
import inspect
import struct

import numpy as np
import pytest

from yuebing.store import MooncakeDistributedStore

torch = pytest.importorskip("torch")

BUF = 1 << 20


def buffer(size: int = BUF) -> np.ndarray:
    return np.zeros(size, dtype=np.uint8)


def addr(buf: np.ndarray, offset: int = 0) -> int:
    return buf.ctypes.data + offset


def serialized(store, key: str, tensor) -> np.ndarray:
    """A buffer holding `tensor` as the store lays it out ([header][data]), made with a round trip
    through the cluster (put_tensor, then get_tensor_into)."""
    assert store.put_tensor(key, tensor) == 0
    buf = buffer()
    assert torch.equal(store.get_tensor_into(key, addr(buf), buf.nbytes), tensor)
    return buf


def inside(tensor, buf: np.ndarray) -> bool:
    return addr(buf) <= tensor.data_ptr() < addr(buf) + buf.nbytes


def test_signatures_match_upstream():
    expected = {
        "get_tensor_with_tp_into": ["key", "buffer_ptr", "size", ("tp_rank", 0), ("tp_size", 1),
                                    ("split_dim", 0)],
        "batch_get_tensor_with_tp_into": ["base_keys", "buffer_ptrs", "sizes", ("tp_rank", 0),
                                          ("tp_size", 1)],
        "put_tensor_with_tp_from": ["key", "buffer_ptr", "size", ("tp_rank", 0), ("tp_size", 1),
                                    ("split_dim", 0)],
        "batch_put_tensor_with_tp_from": ["base_keys", "buffer_ptrs", "sizes", ("tp_rank", 0),
                                          ("tp_size", 1), ("split_dim", 0)],
        "upsert_tensor_from": ["key", "buffer_ptr", "size"],
        "batch_upsert_tensor_from": ["keys", "buffer_ptrs", "sizes"],
        "save_tensor_to_safetensor": ["key", ("file_name", None)],
        "load_tensor_from_safetensor": [("key", None), ("file_name", None)],
    }
    for name, params in expected.items():
        got = list(inspect.signature(getattr(MooncakeDistributedStore, name)).parameters.values())
        assert got[0].name == "self", name
        described = [p.name if p.default is inspect.Parameter.empty else (p.name, p.default)
                     for p in got[1:]]
        assert described == params, name


def test_before_setup():
    from yuebing import _tensor

    s = MooncakeDistributedStore()
    t = torch.arange(8, dtype=torch.float32)
    raw = b"".join(bytes(part) for part in _tensor._parts(t))
    buf = np.frombuffer(bytearray(raw), dtype=np.uint8)
    ptr = addr(buf)
    assert s.put_tensor_with_tp_from("k", ptr, buf.nbytes, tp_size=2) == -600
    assert s.put_tensor_with_tp_from("k", ptr, buf.nbytes) == -600
    assert s.batch_put_tensor_with_tp_from(["k"], [ptr], [buf.nbytes], tp_size=2) == [-600]
    assert s.upsert_tensor_from("k", ptr, buf.nbytes) == -600
    assert s.batch_upsert_tensor_from(["k"], [ptr], [buf.nbytes]) == [-600]
    out = buffer()
    assert s.get_tensor_with_tp_into("k", addr(out), out.nbytes, tp_rank=1, tp_size=2) is None
    assert s.batch_get_tensor_with_tp_into(["a", "b"], [addr(out), addr(out, 4096)],
                                           [4096, 4096], tp_rank=1, tp_size=2) == [None, None]
    assert s.save_tensor_to_safetensor("k", "/nonexistent-dir/never-written") == -600


def test_get_with_tp_into_reads_each_rank_into_its_buffer(store):
    t = torch.arange(6 * 8, dtype=torch.float32).reshape(6, 8)
    assert store.put_tensor_with_tp("tpi", t, tp_size=4, split_dim=1) == 0
    bufs = [buffer() for _ in range(4)]
    for rank, buf in enumerate(bufs):
        shard = store.get_tensor_with_tp_into("tpi", addr(buf), buf.nbytes, tp_rank=rank,
                                              tp_size=4, split_dim=1)
        assert torch.equal(shard, t[:, rank * 2:(rank + 1) * 2])
        assert inside(shard, buf)  # a view of the caller's memory, not a copy
    # tp_size 1 reads the key itself.
    assert store.put_tensor("whole", t) == 0
    buf = buffer()
    assert torch.equal(store.get_tensor_with_tp_into("whole", addr(buf), buf.nbytes), t)
    assert store.get_tensor_with_tp_into("whole", addr(buf), buf.nbytes, tp_rank=0,
                                         tp_size=2) is None  # no whole_tp_0
    assert store.get_tensor_with_tp_into("tpi", addr(buf), buf.nbytes, tp_rank=4,
                                         tp_size=4) is None
    assert store.get_tensor_with_tp_into("tpi", 0, buf.nbytes, tp_rank=0, tp_size=4) is None
    assert store.get_tensor_with_tp_into("tpi", addr(buf), 16, tp_rank=0, tp_size=4) is None


def test_batch_get_with_tp_into(store):
    tensors = [torch.randn(4, 3), torch.arange(8, dtype=torch.int64).reshape(4, 2),
               torch.ones(2, 5, dtype=torch.bfloat16)]
    keys = ["bt-a", "bt-b", "bt-c"]
    assert store.batch_put_tensor_with_tp(keys, tensors, tp_size=2) == [0, 0, 0]
    buf = buffer(4 * 4096)
    ptrs = [addr(buf, i * 4096) for i in range(4)]
    sizes = [4096] * 4
    for rank in range(2):
        got = store.batch_get_tensor_with_tp_into(keys + ["bt-missing"], ptrs, sizes,
                                                  tp_rank=rank, tp_size=2)
        assert len(got) == 4 and got[3] is None
        for shard, tensor, ptr in zip(got, tensors, ptrs):
            assert torch.equal(shard, tensor.chunk(2, 0)[rank])
            assert ptr <= shard.data_ptr() < ptr + 4096
    # tp_size 1 reads the keys themselves.
    assert store.batch_put_tensor(["bt-whole"], [tensors[0]]) == [0]
    whole = store.batch_get_tensor_with_tp_into(["bt-whole"], ptrs[:1], sizes[:1])
    assert torch.equal(whole[0], tensors[0])
    # Bad arguments: -600 for every key, as batch_get_tensor_into.
    assert store.batch_get_tensor_with_tp_into(keys, ptrs[:2], sizes[:2], tp_rank=0,
                                               tp_size=2) == [-600] * 3
    assert store.batch_get_tensor_with_tp_into(keys, [ptrs[0], 0, ptrs[2]], sizes[:3],
                                               tp_rank=0, tp_size=2) == [-600] * 3


def test_put_with_tp_from_writes_every_chunk(store):
    t = torch.arange(3 * 4, dtype=torch.int32).reshape(3, 4)
    full = serialized(store, "ptf-seed", t)
    # A size larger than the object is fine; tp_rank does not limit what is written.
    assert store.put_tensor_with_tp_from("ptf", addr(full), full.nbytes, tp_rank=1, tp_size=2,
                                         split_dim=1) == 0
    for rank in range(2):
        assert torch.equal(store.get_tensor_with_tp("ptf", tp_rank=rank, tp_size=2),
                           t[:, rank * 2:(rank + 1) * 2])
    assert not store.is_exist("ptf")
    # tp_size 1 stores the object as it is: the same bytes as put_tensor wrote.
    assert store.put_tensor_with_tp_from("ptf-whole", addr(full), full.nbytes) == 0
    assert torch.equal(store.get_tensor("ptf-whole"), t)
    assert store.get_size("ptf-whole") == store.get_size("ptf-seed")


def test_put_with_tp_from_bad_arguments(store):
    t = torch.arange(10, dtype=torch.float32)
    full = serialized(store, "bad-seed", t)
    garbage = np.full(4096, 7, dtype=np.uint8)
    size = store.get_size("bad-seed")
    for tp_size in (1, 2):
        assert store.put_tensor_with_tp_from("bad", 0, BUF, tp_size=tp_size) == -600
        assert store.put_tensor_with_tp_from("bad", addr(garbage), garbage.nbytes,
                                             tp_size=tp_size) == -600
        # The data does not fit in `size` bytes.
        assert store.put_tensor_with_tp_from("bad", addr(full), size - 1,
                                             tp_size=tp_size) == -600
    assert store.put_tensor_with_tp_from("bad", addr(full), size, tp_size=4) == -600  # 10 % 4
    assert store.put_tensor_with_tp_from("bad", addr(full), size, tp_size=2, split_dim=1) == -600
    assert store.put_tensor_with_tp_from("bad", addr(full), size, tp_size=2, split_dim=-1) == -600
    assert not any(store.batch_is_exist(["bad"] + [f"bad_tp_{r}" for r in range(4)]))
    assert store.put_tensor_with_tp_from("bad", addr(full), size, tp_size=5) == 0
    assert torch.equal(store.get_tensor("bad_tp_4"), t[8:])


def test_batch_put_with_tp_from(store):
    tensors = [torch.randn(4, 2), torch.arange(8, dtype=torch.int16)]
    fulls = [serialized(store, f"bpf-seed-{i}", t) for i, t in enumerate(tensors)]
    garbage = np.full(4096, 3, dtype=np.uint8)
    ptrs = [addr(fulls[0]), addr(garbage), addr(fulls[1])]
    sizes = [BUF, garbage.nbytes, BUF]
    # The bad buffer gets -600; the others are written all the same (upstream's rule).
    assert store.batch_put_tensor_with_tp_from(["bpf-0", "bpf-bad", "bpf-1"], ptrs, sizes,
                                               tp_rank=3, tp_size=2) == [0, -600, 0]
    for rank in range(2):
        got = store.batch_get_tensor_with_tp(["bpf-0", "bpf-1"], tp_rank=rank, tp_size=2)
        assert torch.equal(got[0], tensors[0].chunk(2)[rank])
        assert torch.equal(got[1], tensors[1].chunk(2)[rank])
    assert store.batch_is_exist(["bpf-bad_tp_0", "bpf-bad_tp_1"]) == [0, 0]
    # A split that is not even fails that key only.
    odd = serialized(store, "bpf-odd-seed", torch.arange(3))
    assert store.batch_put_tensor_with_tp_from(["bpf-2", "bpf-odd"], [addr(fulls[0]), addr(odd)],
                                               [BUF, BUF], tp_size=2) == [0, -600]
    assert store.batch_is_exist(["bpf-2_tp_1", "bpf-odd_tp_0"]) == [1, 0]
    assert store.batch_put_tensor_with_tp_from(["x", "y"], ptrs[:1], sizes[:1],
                                               tp_size=2) == [-600, -600]
    assert store.batch_put_tensor_with_tp_from([], [], [], tp_size=2) == []
    # tp_size 1 is batch_put_tensor_from.
    assert store.batch_put_tensor_with_tp_from(["bpf-whole"], [addr(fulls[1])], [BUF]) == [0]
    assert torch.equal(store.get_tensor("bpf-whole"), tensors[1])


def test_upsert_tensor_from_replaces_the_object(store):
    t = torch.ones(100, dtype=torch.float32)
    full = serialized(store, "utf", t)
    view = store.get_tensor_into("utf", addr(full), full.nbytes)
    view.fill_(42.0)  # writes the caller's buffer
    assert store.put_tensor_from("utf", addr(full), full.nbytes) == 0  # immutable: unchanged
    assert torch.equal(store.get_tensor("utf"), t)
    assert store.upsert_tensor_from("utf", addr(full), full.nbytes) == 0
    assert torch.equal(store.get_tensor("utf"), torch.full((100,), 42.0))
    assert store.get_size("utf") < full.nbytes  # the object only, not the whole buffer
    assert store.upsert_tensor_from("utf-new", addr(full), full.nbytes) == 0
    assert torch.equal(store.get_tensor("utf-new"), torch.full((100,), 42.0))
    garbage = np.full(4096, 9, dtype=np.uint8)
    assert store.upsert_tensor_from("utf", addr(garbage), garbage.nbytes) == -600
    assert store.upsert_tensor_from("utf", 0, full.nbytes) == -600
    assert store.put_tensor_from("utf-garbage", addr(garbage), garbage.nbytes) == -600
    assert store.is_exist("utf-garbage") == 0
    assert torch.equal(store.get_tensor("utf"), torch.full((100,), 42.0))


def test_batch_upsert_tensor_from(store):
    keys = ["but-0", "but-1"]
    originals = [torch.randn(50), torch.arange(6, dtype=torch.int64).reshape(2, 3)]
    fulls = [serialized(store, k, t) for k, t in zip(keys, originals)]
    for k, full in zip(keys, fulls):
        store.get_tensor_into(k, addr(full), full.nbytes).fill_(7)
    ptrs, sizes = [addr(f) for f in fulls], [f.nbytes for f in fulls]
    garbage = np.full(4096, 5, dtype=np.uint8)
    # One bad buffer fails the whole batch and writes nothing (upstream's rule).
    assert store.batch_upsert_tensor_from(keys, [ptrs[0], addr(garbage)],
                                          [sizes[0], garbage.nbytes]) == [-600, -600]
    assert store.batch_upsert_tensor_from(keys, ptrs[:1], sizes[:1]) == [-600, -600]
    assert store.batch_upsert_tensor_from(keys, [ptrs[0], 0], sizes) == [-600, -600]
    for k, t in zip(keys, originals):
        assert torch.equal(store.get_tensor(k), t)
    assert store.batch_upsert_tensor_from([], [], []) == []
    assert store.batch_upsert_tensor_from(keys + ["but-new"], ptrs + ptrs[:1],
                                          sizes + sizes[:1]) == [0, 0, 0]
    got = store.batch_get_tensor(keys + ["but-new"])
    assert torch.equal(got[0], torch.full((50,), 7.0))
    assert torch.equal(got[1], torch.full((2, 3), 7, dtype=torch.int64))
    assert torch.equal(got[2], torch.full((50,), 7.0))
    # batch_put_tensor_from checks its buffers the same way.
    assert store.batch_put_tensor_from(["bpt-x", "bpt-y"], [ptrs[0], addr(garbage)],
                                       [sizes[0], garbage.nbytes]) == [-600, -600]
    assert store.batch_is_exist(["bpt-x", "bpt-y"]) == [0, 0]


def test_uneven_splits_are_refused(store):
    t = torch.arange(10, dtype=torch.float32).reshape(10, 1)
    assert store.put_tensor_with_tp("uneven", t, tp_size=4) == -600
    assert store.put_tensor_with_tp("uneven", t, tp_size=2, split_dim=2) == -600
    assert store.put_tensor_with_tp("uneven", torch.tensor(1.0), tp_size=2) == -600
    assert not any(store.batch_is_exist([f"uneven_tp_{r}" for r in range(4)]))
    assert store.batch_put_tensor_with_tp(["ok", "uneven"], [t, t[:3]], tp_size=5) == [0, -600]
    assert store.batch_is_exist(["ok_tp_4", "uneven_tp_0"]) == [1, 0]
    assert torch.equal(store.get_tensor_with_tp("ok", tp_rank=4, tp_size=5), t[8:])
    assert store.batch_put_tensor_with_tp(["a", "b"], [t], tp_size=2) == [-600, -600]
    assert store.pub_tensor_with_tp("uneven", t, tp_size=3) == -600


def test_async_store_has_the_tp_into_forms(cluster):
    from mooncake.async_store import MooncakeDistributedStoreAsync

    s = MooncakeDistributedStoreAsync()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "",
                   cluster.master_address) == 0
    try:
        t = torch.randn(8, 4)
        bufs = [buffer() for _ in range(3)]  # shards are views: one buffer each

        async def scenario():
            assert await s.async_put_tensor_with_tp("async-tp", t, tp_size=2) == 0
            shards = await asyncio.gather(*(
                s.async_get_tensor_with_tp_into("async-tp", addr(b), b.nbytes, tp_rank=r,
                                                tp_size=2) for r, b in enumerate(bufs[:2])))
            batch = await s.async_batch_get_tensor_with_tp_into(["async-tp"], [addr(bufs[2])],
                                                                [BUF], tp_rank=1, tp_size=2)
            return shards, batch

        shards, batch = asyncio.run(scenario())
        assert torch.equal(torch.cat(shards), t)
        assert torch.equal(batch[0], t[4:])
    finally:
        s.remove_all(True)
        s.close()


SAFETENSOR_CASES = [
    torch.tensor([1.0, 2.0, 3.0, 4.0]),
    torch.arange(12, dtype=torch.int32).reshape(3, 4),
    torch.tensor([True, False, True]),
    torch.randn(2, 3, 4).to(torch.bfloat16),
    torch.arange(6, dtype=torch.uint8),
    torch.tensor(2.5, dtype=torch.float64),
    torch.zeros(0, 3, dtype=torch.float16),
]


@pytest.mark.parametrize("tensor", SAFETENSOR_CASES, ids=lambda t: f"{t.dtype}{list(t.shape)}")
def test_safetensor_round_trip(store, tmp_path, tensor):
    path = str(tmp_path / "t.safetensors")
    assert store.put_tensor("st", tensor) == 0
    assert store.save_tensor_to_safetensor("st", path) == 0
    assert store.remove("st") == 0
    loaded = store.load_tensor_from_safetensor("st", path)
    assert loaded.dtype == tensor.dtype and torch.equal(loaded, tensor)
    assert torch.equal(store.get_tensor("st"), tensor)


def test_safetensor_file_layout(store, tmp_path):
    t = torch.arange(5, dtype=torch.int64)
    assert store.put_tensor("layout", t) == 0
    path = tmp_path / "layout.safetensors"
    assert store.save_tensor_to_safetensor("layout", str(path)) == 0
    raw = path.read_bytes()
    (header_len,) = struct.unpack_from("<Q", raw)
    assert header_len % 8 == 0
    import json

    header = json.loads(raw[8:8 + header_len])
    assert header == {"layout": {"dtype": "I64", "shape": [5], "data_offsets": [0, 40]}}
    assert raw[8 + header_len:] == t.numpy().tobytes()


def test_safetensor_names_and_errors(store, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    t = torch.tensor([5.0, 6.0, 7.0])
    assert store.put_tensor("by-key", t) == 0
    assert store.save_tensor_to_safetensor("by-key") == 0  # file named as the key
    assert (tmp_path / "by-key").exists()
    # Another key: the file's only entry is taken and stored under the new key.
    assert torch.equal(store.load_tensor_from_safetensor("renamed", "by-key"), t)
    assert torch.equal(store.get_tensor("renamed"), t)
    # No key: stored under the file name.
    assert store.remove("by-key") == 0
    assert torch.equal(store.load_tensor_from_safetensor(file_name="by-key"), t)
    assert torch.equal(store.get_tensor("by-key"), t)
    assert store.save_tensor_to_safetensor("absent-key", "x.safetensors") == -1100
    assert not (tmp_path / "x.safetensors").exists()
    assert store.save_tensor_to_safetensor("by-key", str(tmp_path / "no-dir" / "f")) == -600
    assert store.load_tensor_from_safetensor("k", "no-such-file.safetensors") is None
    (tmp_path / "truncated").write_bytes(struct.pack("<Q", 50) + b"{}")
    (tmp_path / "empty").write_bytes(struct.pack("<Q", 2) + b"{}")
    assert store.load_tensor_from_safetensor("k", "truncated") is None
    assert store.load_tensor_from_safetensor("k", "empty") is None
    assert store.is_exist("k") == 0
    with pytest.raises(TypeError):
        store.load_tensor_from_safetensor("k")
    assert store.put("raw", b"not a tensor") == 0
    assert store.save_tensor_to_safetensor("raw", "raw.safetensors") == -1100


def test_safetensor_files_of_the_safetensors_package(store, tmp_path):
    st = pytest.importorskip("safetensors.torch")
    a, z = torch.arange(3, dtype=torch.int8), torch.randn(2, 2, dtype=torch.float64)
    path = str(tmp_path / "two.safetensors")
    st.save_file({"a": a, "z": z}, path)
    assert torch.equal(store.load_tensor_from_safetensor("a", path), a)
    assert torch.equal(store.get_tensor("a"), a)
    # A name not in the file: the first entry in the file (z: the package writes wider dtypes
    # first), as upstream's load_file order gives.
    assert torch.equal(store.load_tensor_from_safetensor("other", path), z)
    # And the package reads what yuebing writes.
    assert store.put_tensor("mine", z) == 0
    assert store.save_tensor_to_safetensor("mine", str(tmp_path / "mine.st")) == 0
    assert torch.equal(st.load_file(str(tmp_path / "mine.st"))["mine"], z)
