"""Tensor methods of MooncakeDistributedStore (skipped when torch is not installed)."""

import numpy as np
import pytest

from yuebing.store import MooncakeDistributedStore, ReplicateConfig

torch = pytest.importorskip("torch")

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int8, torch.uint8,
          torch.bool, torch.float64]


def test_methods_exist_only_with_torch():
    for name in ("put_tensor", "get_tensor", "batch_put_tensor", "batch_get_tensor",
                 "pub_tensor", "upsert_tensor", "put_tensor_with_tp", "get_tensor_with_tp",
                 "get_tensor_into", "put_tensor_from"):
        assert hasattr(MooncakeDistributedStore, name)


def test_before_setup():
    s = MooncakeDistributedStore()
    assert s.put_tensor("t", torch.zeros(3)) == -600
    assert s.get_tensor("t") is None
    assert s.batch_get_tensor(["t"]) == [None]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_round_trip_dtypes(store, dtype):
    t = (torch.arange(24) % 7).to(dtype).reshape(2, 3, 4)
    assert store.put_tensor(f"t-{dtype}", t) == 0
    back = store.get_tensor(f"t-{dtype}")
    assert back.dtype == dtype and back.shape == t.shape
    assert torch.equal(back, t)


def test_shapes_and_views(store):
    scalar = torch.tensor(3.5)
    empty = torch.zeros(0, 5)
    strided = torch.arange(100, dtype=torch.float32).reshape(10, 10)[:, ::3]
    grad = torch.ones(4, requires_grad=True)
    assert store.batch_put_tensor(["s", "e", "v", "g"], [scalar, empty, strided, grad]) == [0] * 4
    s, e, v, g = store.batch_get_tensor(["s", "e", "v", "g"])
    assert s.shape == () and s.item() == 3.5
    assert e.shape == (0, 5)
    assert torch.equal(v, strided)
    assert torch.equal(g, torch.ones(4)) and not g.requires_grad
    assert store.batch_get_tensor(["s", "missing"])[1] is None


def test_miss_non_tensor_and_bad_arguments(store):
    assert store.get_tensor("missing") is None
    assert store.put("raw-bytes", b"not a tensor") == 0
    assert store.get_tensor("raw-bytes") is None
    assert store.put_tensor("bad", "not a tensor") == -600
    assert store.batch_put_tensor(["a", "b"], [torch.zeros(1)]) == [-600, -600]


def test_pub_and_upsert(store):
    rc = ReplicateConfig()
    rc.replica_num = 2
    assert store.pub_tensor("pub", torch.ones(8), rc) == 0
    assert store.put_tensor("pub", torch.zeros(8)) == 0  # immutable
    assert torch.equal(store.get_tensor("pub"), torch.ones(8))
    assert store.upsert_tensor("pub", torch.zeros(3)) == 0
    assert torch.equal(store.get_tensor("pub"), torch.zeros(3))
    assert store.batch_pub_tensor(["bp1", "bp2"], [torch.ones(2), torch.ones(3)], rc) == [0, 0]
    assert store.batch_upsert_tensor(["bp1"], [torch.zeros(2)]) == [0]
    assert store.upsert_pub_tensor("bp2", torch.zeros(1), rc) == 0
    assert store.batch_upsert_pub_tensor(["bp3"], [torch.ones(1)], rc) == [0]
    got = store.batch_get_tensor(["bp1", "bp2", "bp3"])
    assert [t.tolist() for t in got] == [[0.0, 0.0], [0.0], [1.0]]


def test_tensor_parallel_chunks(store):
    t = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    assert store.put_tensor_with_tp("tp", t, tp_size=4, split_dim=1) == 0
    for rank in range(4):
        shard = store.get_tensor_with_tp("tp", tp_rank=rank, tp_size=4, split_dim=1)
        assert torch.equal(shard, t[:, rank * 2:(rank + 1) * 2])
    assert store.get_tensor("tp_tp_3") is not None
    assert store.batch_put_tensor_with_tp(["tpa", "tpb"], [t, t], tp_size=2) == [0, 0]
    shards = store.batch_get_tensor_with_tp(["tpa", "tpb"], tp_rank=1, tp_size=2)
    assert all(torch.equal(s, t[2:]) for s in shards)
    assert store.put_tensor_with_tp("whole", t) == 0
    assert torch.equal(store.get_tensor_with_tp("whole"), t)


def test_zero_copy_tensor_forms(store):
    t = torch.randn(64, 64)
    assert store.put_tensor("zc", t) == 0
    size = store.get_size("zc")
    buf = np.zeros(size + 100, dtype=np.uint8)
    assert store.register_buffer(buf.ctypes.data, buf.nbytes) == 0
    back = store.get_tensor_into("zc", buf.ctypes.data, buf.nbytes)
    assert torch.equal(back, t)
    assert store.put_tensor_from("zc-copy", buf.ctypes.data, size) == 0
    assert torch.equal(store.get_tensor("zc-copy"), t)
    assert store.get_tensor_into("missing", buf.ctypes.data, buf.nbytes) is None
    assert store.batch_put_tensor_from(["zc-2"], [buf.ctypes.data], [size]) == [0]
    out = store.batch_get_tensor_into(["zc-2", "missing"], [buf.ctypes.data, buf.ctypes.data],
                                      [buf.nbytes, buf.nbytes])
    assert torch.equal(out[0], t) and out[1] is None
    store.unregister_buffer(buf.ctypes.data)
