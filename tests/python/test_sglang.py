"""yuebing.sglang: the SGLang HiCache storage backend, against a real yuebing cluster.

The first tests drive the backend through a small stand-in host pool with SGLang's zero-copy page
API (kv_buffer, page_size, get_page_buffer_meta) and run without SGLang. The tests at the end use
the real `sglang` package: its storage config, its dynamic backend factory, its own host KV pools
(MHATokenToKVPoolHost, MLATokenToKVPoolHost on CPU) and its own `mooncake` backend over the
`mooncake` alias. They are skipped, with the reason, when sglang or torch is not importable;
scripts/test-integrations installs both (exact pins) and runs this file.
"""

from __future__ import annotations

import ctypes
import importlib
import uuid
from types import SimpleNamespace
from typing import List

import pytest

from conftest import new_store

np = pytest.importorskip("numpy")


def sglang_missing_reason():
    try:
        importlib.import_module("torch")
        importlib.import_module("sglang.srt.mem_cache.hicache_storage")
        importlib.import_module("sglang.srt.mem_cache.storage.backend_factory")
    except Exception as e:  # ImportError or a broken partial install
        return f"sglang/torch not importable ({type(e).__name__}: {e}); run scripts/test-integrations"
    return None


class _Buf:
    """A host buffer with the tensor methods the backend uses (data_ptr/numel/element_size)."""

    def __init__(self, nbytes: int):
        self.raw = (ctypes.c_uint8 * nbytes)()
        self.view = np.frombuffer(self.raw, dtype=np.uint8)

    def data_ptr(self) -> int:
        return ctypes.addressof(self.raw)

    def numel(self) -> int:
        return len(self.raw)

    def element_size(self) -> int:
        return 1


class StandInPool:
    """Pages of `page_bytes` per token slot group: K half then V half (page-first), or
    `layers` separate K/V chunks per page (layer-first, several buffers per object)."""

    def __init__(self, pages: int, page_size: int = 4, token_bytes: int = 64,
                 layer_first: bool = False, layers: int = 4, mla: bool = False):
        self.page_size, self.token_bytes = page_size, token_bytes
        self.size = pages * page_size
        self.layer_first, self.layers, self.mla = layer_first, layers, mla
        self.parts = 1 if mla else 2
        self.kv_buffer = _Buf(self.parts * self.size * token_bytes)

    def get_page_buffer_meta(self, indices):
        idx = list(indices.tolist() if hasattr(indices, "tolist") else indices)
        base, half = self.kv_buffer.data_ptr(), self.size * self.token_bytes
        page_bytes = self.page_size * self.token_bytes
        ptrs: List[int] = []
        for i in range(0, len(idx), self.page_size):
            start = base + idx[i] * self.token_bytes
            if self.layer_first:  # per layer: k[, v], each a slice of the page
                step = page_bytes // self.layers
                for layer in range(self.layers):
                    for part in range(self.parts):
                        ptrs.append(start + part * half + layer * step)
            else:
                ptrs.extend(start + part * half for part in range(self.parts))
        size = page_bytes // self.layers if self.layer_first else page_bytes
        return ptrs, [size] * len(ptrs)

    def fill(self, page: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        for part in range(self.parts):
            self.page_view(page, part)[:] = rng.integers(0, 256, self.page_size * self.token_bytes,
                                                         dtype=np.uint8)

    def page_view(self, page: int, part: int):
        half = self.size * self.token_bytes
        page_bytes = self.page_size * self.token_bytes
        start = part * half + page * page_bytes
        return self.kv_buffer.view[start:start + page_bytes]

    def indices(self, pages: List[int]):
        return np.array([p * self.page_size + t for p in pages for t in range(self.page_size)])


def config(tp_rank=0, mla=False, pp_rank=0, pp_size=1, extra=None):
    return SimpleNamespace(tp_rank=tp_rank, tp_size=4, pp_rank=pp_rank, pp_size=pp_size,
                           is_mla_model=mla, extra_config=extra,
                           is_storage_writer=(not mla or tp_rank == 0))


@pytest.fixture
def backend_factory(cluster):
    from yuebing.sglang import YuebingHiCacheStorage

    made = []

    def make(pool, **cfg):
        b = YuebingHiCacheStorage(config(**cfg), {}, store=new_store(cluster.master_address, 0))
        b.register_mem_pool_host(pool)
        made.append(b)
        return b

    yield make
    for b in made:
        b.close()
        b.store.close()


def hashes(n: int) -> List[str]:
    tag = uuid.uuid4().hex[:8]
    return [f"{tag}{i:04x}" for i in range(n)]


@pytest.mark.parametrize("layer_first", [False, True])
def test_mha_pages_round_trip_on_several_ranks(backend_factory, layer_first):
    keys = hashes(5)
    writers, readers = [], []
    for rank in range(3):
        src = StandInPool(8, layer_first=layer_first)
        for p in range(5):
            src.fill(p, seed=rank * 100 + p)
        b = backend_factory(src, tp_rank=rank)
        assert b.batch_exists(keys) == 0
        assert b.batch_set_v1(keys, src.indices([0, 1, 2, 3, 4])) == [True] * 5
        assert b.batch_exists(keys) == 5
        writers.append(src)
        readers.append(backend_factory(StandInPool(8, layer_first=layer_first), tp_rank=rank))
    store = readers[0].store
    for rank in range(3):
        assert store.is_exist(f"{keys[0]}_{rank}_k") == 1
        assert store.is_exist(f"{keys[0]}_{rank}_v") == 1
    for rank, (src, reader) in enumerate(zip(writers, readers)):
        dst = reader.mem_pool_host
        # read pages 4,3,2,1,0 into host slots 7,6,5,4,3
        assert reader.batch_get_v1(keys[::-1], dst.indices([3, 4, 5, 6, 7])) == [True] * 5
        for i, p in enumerate(range(4, -1, -1)):
            for part in (0, 1):
                assert bytes(dst.page_view(3 + i, part)) == bytes(src.page_view(p, part)), \
                    (rank, p, part)


def test_batch_exists_is_the_leading_run_and_misses_read_false(backend_factory):
    keys = hashes(4)
    src = StandInPool(4)
    for p in range(4):
        src.fill(p, seed=p)
    b = backend_factory(src, tp_rank=0)
    assert b.batch_set_v1([keys[0], keys[1], keys[3]], src.indices([0, 1, 3])) == [True] * 3
    assert b.batch_exists(keys) == 2
    assert b.batch_exists(keys[3:]) == 1
    assert b.batch_exists([]) == 0
    # a page with only its V object is not a hit
    b.store.remove(f"{keys[1]}_0_k")
    assert b.batch_exists(keys) == 1
    assert b.batch_get_v1(keys, src.indices([0, 1, 2, 3])) == [True, False, False, True]
    # writing existing pages again is a success, not an error
    assert b.batch_set_v1([keys[0]], src.indices([0])) == [True]
    assert b.exists(f"{keys[0]}_0_k") and not b.exists(f"{keys[2]}_0_k")


@pytest.mark.parametrize("layer_first", [False, True])
def test_mla_one_writer_all_ranks_read(backend_factory, layer_first):
    keys = hashes(3)
    src0 = StandInPool(4, mla=True, layer_first=layer_first)
    src1 = StandInPool(4, mla=True, layer_first=layer_first)
    for p in range(3):
        src0.fill(p, seed=10 + p)
        src1.fill(p, seed=20 + p)
    w = backend_factory(src0, tp_rank=0, mla=True)
    other = backend_factory(src1, tp_rank=1, mla=True)
    assert other.batch_set_v1(keys, src1.indices([0, 1, 2])) == [True] * 3  # not a writer
    assert other.batch_exists(keys) == 0
    assert w.batch_set_v1(keys, src0.indices([0, 1, 2])) == [True] * 3
    assert w.store.is_exist(f"{keys[0]}__k") == 1
    for rank in (1, 2):
        r = backend_factory(StandInPool(4, mla=True, layer_first=layer_first), tp_rank=rank,
                            mla=True)
        assert r.batch_exists(keys) == 3
        assert r.batch_get_v1(keys, r.mem_pool_host.indices([2, 1, 0])) == [True] * 3
        for i in range(3):
            assert bytes(r.mem_pool_host.page_view(2 - i, 0)) == bytes(src0.page_view(i, 0))


def test_pipeline_parallel_ranks_have_their_own_keys(backend_factory):
    keys = hashes(1)
    src = StandInPool(2)
    src.fill(0, seed=1)
    b = backend_factory(src, tp_rank=1, pp_rank=1, pp_size=2)
    assert b.batch_set_v1(keys, src.indices([0])) == [True]
    assert b.store.is_exist(f"{keys[0]}_1_1_k") == 1
    assert backend_factory(StandInPool(2), tp_rank=1, pp_rank=0, pp_size=2).batch_exists(keys) == 0


def test_single_object_forms(backend_factory):
    b = backend_factory(StandInPool(2), tp_rank=0)
    key = hashes(1)[0]
    assert b.get(key) is None
    assert b.set(key, b"hello") and b.exists(key)
    assert b.get(key) == b"hello"
    assert b.set(key, b"other")  # already there: kept, success
    assert b.get(key) == b"hello"
    assert b.batch_set([key + "a", key + "b"], [b"x", b"y"])
    assert b.batch_get([key + "a", key + "b", key + "c"]) == [b"x", b"y", None]


def test_setup_from_extra_config_and_environment(cluster, monkeypatch):
    from yuebing.sglang import YuebingHiCacheStorage

    b = YuebingHiCacheStorage(config(extra={"master_server_address": cluster.master_address,
                                            "local_hostname": "127.0.0.1",
                                            "global_segment_size": 0,
                                            "local_buffer_size": 16 << 20,
                                            "backend_name": "yuebing"}), {})
    assert b.set(hashes(1)[0], b"v")
    b.close()
    monkeypatch.delenv("MOONCAKE_CONFIG_PATH", raising=False)
    monkeypatch.setenv("MOONCAKE_MASTER", cluster.master_address)
    monkeypatch.setenv("MOONCAKE_LOCAL_HOSTNAME", "127.0.0.1")
    monkeypatch.setenv("MOONCAKE_GLOBAL_SEGMENT_SIZE", "0")
    monkeypatch.setenv("MOONCAKE_LOCAL_BUFFER_SIZE", str(16 << 20))
    b = YuebingHiCacheStorage(config(), {})
    assert b.exists("no-such-key") is False
    b.close()


# ---- with the real sglang package ---------------------------------------------------------

needs_sglang = pytest.mark.skipif(sglang_missing_reason() is not None,
                                  reason=str(sglang_missing_reason()))


def sglang_config(tp_rank=0, mla=False, extra=None):
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorageConfig

    return HiCacheStorageConfig(tp_rank=tp_rank, tp_size=2, pp_rank=0, pp_size=1,
                                attn_cp_rank=0, attn_cp_size=1, is_mla_model=mla,
                                enable_storage_metrics=False, is_page_first_layout=True,
                                model_name="test-model", extra_config=extra)


@needs_sglang
@pytest.mark.parametrize("mla", [False, True])
def test_sglang_dynamic_factory_loads_the_backend(cluster, mla):
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorage
    from sglang.srt.mem_cache.storage.backend_factory import StorageBackendFactory

    from yuebing.sglang import YuebingHiCacheStorage

    extra = {"backend_name": "yuebing", "module_path": "yuebing.sglang",
             "class_name": "YuebingHiCacheStorage",
             "master_server_address": cluster.master_address, "local_hostname": "127.0.0.1",
             "global_segment_size": 0, "local_buffer_size": 16 << 20}
    keys = hashes(3)
    backends = []
    try:
        for rank in (0, 1):
            b = StorageBackendFactory.create_backend("dynamic", sglang_config(rank, mla, extra),
                                                     None)
            assert isinstance(b, HiCacheStorage) and isinstance(b, YuebingHiCacheStorage)
            pool = StandInPool(4, mla=mla)
            for p in range(3):
                pool.fill(p, seed=rank * 10 + p)
            b.register_mem_pool_host(pool)
            backends.append(b)
        for b in backends:
            assert b.batch_set_v1(keys, b.mem_pool_host.indices([0, 1, 2])) == [True] * 3
        for rank, b in enumerate(backends):
            assert b.batch_exists(keys) == 3
            dst = StandInPool(4, mla=mla)
            b.register_mem_pool_host(dst)
            assert b.batch_get_v1(keys, dst.indices([1, 2, 3])) == [True] * 3
            for p in range(3):
                expect = StandInPool(4, mla=mla)
                expect.fill(p, seed=(0 if mla else rank) * 10 + p)
                assert bytes(dst.page_view(p + 1, 0)) == bytes(expect.page_view(p, 0))
    finally:
        for b in backends:
            b.close()


def real_pool(mla: bool, layout: str, seed: int = 0):
    """One of SGLang's own host KV pools (MHATokenToKVPoolHost / MLATokenToKVPoolHost) on CPU,
    filled with random values."""
    import torch

    layers, page = 2, 4
    if mla:
        from sglang.srt.mem_cache.device_pool_info import MLABufferInfo
        from sglang.srt.mem_cache.pool_host.mla import MLATokenToKVPoolHost

        rank, rope = 16, 8
        bufs = tuple(torch.zeros(64, 1, rank + rope) for _ in range(layers))
        info = MLABufferInfo(buffers=bufs,
                             data_ptrs=torch.tensor([b.data_ptr() for b in bufs],
                                                    dtype=torch.uint64),
                             layer_indices=tuple(range(layers)), device_layer_num=layers,
                             page_size=page, kv_lora_rank=rank, qk_rope_head_dim=rope,
                             kv_cache_dim=rank + rope, dtype=torch.float32,
                             device=torch.device("cpu"))
        pool = MLATokenToKVPoolHost(info, 2.0, 0, page, layout, pin_memory=False, device="cpu",
                                    device_capacity_tokens=64, start_layer=0, end_layer=layers,
                                    target_layer_num=layers)
    else:
        from sglang.srt.mem_cache.device_pool_info import (KVBufferLayout, KVBuffers,
                                                           MHABufferInfo)
        from sglang.srt.mem_cache.pool_host.mha import MHATokenToKVPoolHost

        heads, dim = 2, 8
        k = tuple(torch.zeros(64, heads, dim) for _ in range(layers))
        v = tuple(torch.zeros(64, heads, dim) for _ in range(layers))

        def ptrs(ts):
            return torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64)

        info = MHABufferInfo(buffers=KVBuffers(k=k, v=v, k_data_ptrs=ptrs(k), v_data_ptrs=ptrs(v),
                                               layout=KVBufferLayout.NHD),
                             page_size=page, head_num=heads, head_dim=dim, v_head_dim=dim,
                             dtype=torch.float32, device=torch.device("cpu"))
        pool = MHATokenToKVPoolHost(info, 2.0, 0, page, layout, pin_memory=False, device="cpu",
                                    device_capacity_tokens=64, start_layer=0, end_layer=layers)
    bufs = pool.kv_buffer if isinstance(pool.kv_buffer, (list, tuple)) else [pool.kv_buffer]
    gen = torch.Generator().manual_seed(seed)
    for b in bufs:
        b.copy_(torch.rand(b.shape, generator=gen))
    return pool


def slots(pool, pages: List[int]):
    import torch

    return torch.tensor([p * pool.page_size + t for p in pages for t in range(pool.page_size)],
                        dtype=torch.int64)


def page_bytes(pool, page: int) -> bytes:
    """The bytes SGLang's pool itself says make up one page (its zero-copy page metadata)."""
    ptrs, sizes = pool.get_page_buffer_meta(slots(pool, [page]))
    flat = []
    for p, s in zip(ptrs, sizes):
        flat.extend(zip(p, s) if isinstance(p, (list, tuple)) else [(p, s)])
    return b"".join(ctypes.string_at(p, s) for p, s in flat)


def make_pool_or_skip(mla, layout, seed=0):
    try:
        return real_pool(mla, layout, seed)
    except Exception as e:  # an SGLang version whose host pools need other arguments or a GPU
        pytest.skip(f"SGLang host pool {'MLA' if mla else 'MHA'}/{layout} not built on CPU: "
                    f"{type(e).__name__}: {e}")


def sglang_backend(cluster, cls_name, rank, mla, pool):
    extra = {"master_server_address": cluster.master_address, "local_hostname": "127.0.0.1",
             "global_segment_size": 0, "local_buffer_size": 16 << 20, "protocol": "tcp",
             "metadata_server": "P2PHANDSHAKE", "check_server": False}
    cfg = sglang_config(rank, mla, extra)
    if cls_name == "yuebing":
        from sglang.srt.mem_cache.storage.backend_factory import StorageBackendFactory

        extra.update(backend_name="yuebing", module_path="yuebing.sglang",
                     class_name="YuebingHiCacheStorage")
        b = StorageBackendFactory.create_backend("dynamic", cfg, pool)
    else:  # SGLang's own mooncake backend, on yuebing through the `mooncake` alias
        from sglang.srt.mem_cache.storage.backend_factory import StorageBackendFactory

        b = StorageBackendFactory.create_backend("mooncake", cfg, pool)
    b.register_mem_pool_host(pool)
    return b


@needs_sglang
@pytest.mark.parametrize("backend", ["yuebing", "mooncake"])
@pytest.mark.parametrize("mla,layout", [(False, "page_first"), (False, "layer_first"),
                                        (True, "page_first"), (True, "layer_first")])
def test_sglang_host_pools_round_trip(cluster, backend, mla, layout):
    if backend == "mooncake" and layout == "layer_first" and not mla:
        pytest.skip("SGLang's mooncake backend supports layer_first only for MLA")
    keys = hashes(3)
    writers = []
    try:
        for rank in (0, 1):
            pool = make_pool_or_skip(mla, layout, seed=rank + 1)
            b = sglang_backend(cluster, backend, rank, mla, pool)
            writers.append(b)
            assert b.batch_exists(keys) == 0 or (mla and rank == 1)
            assert b.batch_set_v1(keys, slots(pool, [1, 2, 3])) == [True] * 3
        for rank, w in enumerate(list(writers)):
            assert w.batch_exists(keys) == 3
            assert w.batch_exists(keys + hashes(1)) == 3
            if not mla and backend == "yuebing":  # mooncake's may prefix its keys
                assert w.exists(f"{keys[0]}_{rank}_k") and w.exists(f"{keys[0]}_{rank}_v")
            dst = make_pool_or_skip(mla, layout, seed=99)
            r = sglang_backend(cluster, backend, rank, mla, dst)
            writers.append(r)
            assert r.batch_get_v1(keys, slots(dst, [5, 6, 7])) == [True] * 3
            src = writers[0].mem_pool_host if mla else w.mem_pool_host
            for i in range(3):
                assert page_bytes(dst, 5 + i) == page_bytes(src, 1 + i), (rank, i)
    finally:
        for b in writers:
            b.close()
