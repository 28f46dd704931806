"""yuebing under SGLang's HiCache storage layer, through SGLang's own code, on a real cluster.

`yuebing.sglang.YuebingHiCacheStorage` is SGLang's `MooncakeStore` over the `mooncake` alias,
loaded through SGLang's `dynamic` backend factory. These tests build it, and SGLang's own built-in
`mooncake` backend, with SGLang's factory over SGLang's own host KV pools (CPU), drive SGLang's
`HiCacheController` backup and prefetch threads over them, and compare pages byte for byte. They
need the `sglang` package and torch, and are skipped (with the reason) without them;
scripts/test-integrations installs both (exact pins) and runs this file.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import threading
import uuid
from typing import List

import pytest

from conftest import new_store


def sglang_missing_reason():
    try:
        importlib.import_module("torch")
        importlib.import_module("sglang.srt.mem_cache.hicache_storage")
        importlib.import_module("sglang.srt.mem_cache.storage.backend_factory")
        importlib.import_module("sglang.srt.mem_cache.storage.mooncake_store.mooncake_store")
    except Exception as e:  # ImportError or a broken partial install
        return (f"sglang/torch not importable ({type(e).__name__}: {e}); "
                "run scripts/test-integrations")
    return None


pytestmark = pytest.mark.skipif(sglang_missing_reason() is not None,
                                reason=str(sglang_missing_reason()))

TAG, MODEL = "yb-test", "org/model-7b"


def hashes(n: int) -> List[str]:
    return [uuid.uuid4().hex for _ in range(n)]


def sglang_config(tp_rank=0, mla=False, extra=None, model_name="test-model"):
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorageConfig

    return HiCacheStorageConfig(tp_rank=tp_rank, tp_size=2, pp_rank=0, pp_size=1,
                                attn_cp_rank=0, attn_cp_size=1, is_mla_model=mla,
                                enable_storage_metrics=False, is_page_first_layout=True,
                                model_name=model_name, extra_config=extra)


def client_extra(cluster, backend: str) -> dict:
    """The extra config of one SGLang rank's client (SGLang's MooncakeStoreConfig names)."""
    extra = {"master_server_address": cluster.master_address, "local_hostname": "127.0.0.1",
             "global_segment_size": 0, "local_buffer_size": 16 << 20, "protocol": "tcp",
             "metadata_server": "P2PHANDSHAKE", "check_server": False}
    if backend == "yuebing":
        extra.update(backend_name="yuebing", module_path="yuebing.sglang",
                     class_name="YuebingHiCacheStorage")
    return extra


def factory_name(backend: str) -> str:
    return "dynamic" if backend == "yuebing" else "mooncake"


def real_pool(mla: bool, layout: str, seed: int = 0, allocator_type: str = "default"):
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
                                    allocator_type=allocator_type, device_capacity_tokens=64,
                                    start_layer=0, end_layer=layers)
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


def sglang_backend(cluster, backend, rank, mla, pool, **extra_overrides):
    from sglang.srt.mem_cache.storage.backend_factory import StorageBackendFactory

    extra = client_extra(cluster, backend)
    extra.update(extra_overrides)
    model = extra.pop("model_name", "test-model")
    b = StorageBackendFactory.create_backend(factory_name(backend),
                                             sglang_config(rank, mla, extra, model), pool)
    b.register_mem_pool_host(pool)
    return b


def test_dynamic_factory_builds_sglangs_mooncake_class_with_zero_copy_on(cluster):
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorage
    from sglang.srt.mem_cache.storage.backend_factory import StorageBackendFactory
    from sglang.srt.mem_cache.storage.mooncake_store.mooncake_store import MooncakeStore

    from yuebing.sglang import YuebingHiCacheStorage

    extra = client_extra(cluster, "yuebing")
    assert "interface_v1" not in extra
    cfg = sglang_config(0, False, extra)
    b = StorageBackendFactory.create_backend("dynamic", cfg, None)
    try:
        assert isinstance(b, YuebingHiCacheStorage)
        assert isinstance(b, MooncakeStore) and isinstance(b, HiCacheStorage)
        # The cache controller reads this after building the backend to pick its zero-copy
        # page functions (the only ones SGLang's Mooncake class implements).
        assert cfg.extra_config["interface_v1"] == 1
    finally:
        b.close()


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


@pytest.mark.parametrize("writer,reader", [("yuebing", "mooncake"), ("mooncake", "yuebing")])
@pytest.mark.parametrize("mla", [False, True])
def test_yuebing_and_sglangs_mooncake_backend_read_each_others_pages(cluster, writer, reader,
                                                                     mla):
    """Same keys, tag and model prefix included: a page one backend stored is a hit in the
    other, with the same bytes, and the objects carry SGLang's key names."""
    keys = hashes(2)
    tagged = {"extra_backend_tag": TAG, "model_name": MODEL}
    made = []
    try:
        src = make_pool_or_skip(mla, "page_first", seed=7)
        w = sglang_backend(cluster, writer, 0, mla, src, **tagged)
        made.append(w)
        assert w.batch_set_v1(keys, slots(src, [1, 2])) == [True, True]
        dst = make_pool_or_skip(mla, "page_first", seed=8)
        r = sglang_backend(cluster, reader, 0, mla, dst, **tagged)
        made.append(r)
        assert r.batch_exists(keys) == 2
        assert r.batch_get_v1(keys, slots(dst, [4, 5])) == [True, True]
        for i in range(2):
            assert page_bytes(dst, 4 + i) == page_bytes(src, 1 + i)
        # Another model's (or untagged) backend sees none of them.
        other = sglang_backend(cluster, reader, 0, mla, make_pool_or_skip(mla, "page_first"))
        made.append(other)
        assert other.batch_exists(keys) == 0
        raw = new_store(cluster.master_address)
        try:
            prefix = f"{TAG}_{MODEL.replace('/', '-')}_{keys[0]}"
            names = [f"{prefix}__k"] if mla else [f"{prefix}_0_k", f"{prefix}_0_v"]
            assert raw.batch_is_exist(names) == [1] * len(names)
        finally:
            raw.close()
    finally:
        for b in made:
            b.close()


def mamba_host_pool(seed: int):
    """SGLang's MambaPoolHost (a hybrid model's Mamba state pool) on CPU, random states."""
    import torch
    from sglang.srt.mem_cache.device_pool_info import MambaStateBufferInfo
    from sglang.srt.mem_cache.pool_host.mamba import MambaPoolHost

    layers, checkpoints = 2, 8
    info = MambaStateBufferInfo(temporal=torch.zeros(layers, checkpoints, 4, 8),
                                conv=(torch.zeros(layers, checkpoints, 3, 16),))
    pool = MambaPoolHost(info, 2.0, 0, device_capacity=checkpoints, pin_memory=False,
                         device="cpu", layout="page_first")
    gen = torch.Generator().manual_seed(seed)
    for buf in pool.get_hybrid_pool_buffer():
        buf.copy_(torch.rand(buf.shape, generator=gen))
    return pool


@pytest.mark.parametrize("writer,reader", [("yuebing", "mooncake"), ("mooncake", "yuebing")])
def test_hybrid_model_pages_through_the_v2_interface(cluster, writer, reader):
    """A hybrid (Mamba) model: KV pages through v1, Mamba states through batch_set_v2 /
    batch_exists_v2 / batch_get_v2, written by one backend and read by the other."""
    import torch
    from sglang.srt.mem_cache.hicache_storage import PoolName, PoolTransfer

    keys = hashes(2)
    made = []
    try:
        kv_src, mamba_src = make_pool_or_skip(False, "page_first", seed=3), mamba_host_pool(3)
        w = sglang_backend(cluster, writer, 0, False, kv_src)
        made.append(w)
        w.register_mem_host_pool_v2(mamba_src, PoolName.MAMBA)
        src_states = mamba_src.alloc(2)
        assert w.batch_set_v1(keys, slots(kv_src, [1, 2])) == [True, True]
        put = w.batch_set_v2([PoolTransfer(name=PoolName.MAMBA, host_indices=src_states,
                                           keys=keys)])
        assert put[PoolName.MAMBA] == [True, True]

        kv_dst, mamba_dst = make_pool_or_skip(False, "page_first", seed=4), mamba_host_pool(4)
        r = sglang_backend(cluster, reader, 0, False, kv_dst)
        made.append(r)
        r.register_mem_host_pool_v2(mamba_dst, PoolName.MAMBA)
        hits = r.batch_exists_v2(keys, [PoolTransfer(name=PoolName.MAMBA, keys=keys)])
        assert hits.kv_hit_pages == 2 and hits.extra_pool_hit_pages[PoolName.MAMBA] == 2
        missing = hashes(1)
        assert r.batch_exists_v2(missing, [PoolTransfer(name=PoolName.MAMBA,
                                                        keys=missing)]).kv_hit_pages == 0
        dst_states = mamba_dst.alloc(2)
        got = r.batch_get_v2([PoolTransfer(name=PoolName.MAMBA, host_indices=dst_states,
                                           keys=keys)])
        assert got[PoolName.MAMBA] == [True, True]
        # page_first host buffers: (slot, layer, 1, *state shape)
        for a, b in zip(mamba_src.get_hybrid_pool_buffer(), mamba_dst.get_hybrid_pool_buffer()):
            for i in range(2):
                assert torch.equal(a[int(src_states[i])], b[int(dst_states[i])])
    finally:
        for b in made:
            b.close()


def test_check_server_polls_the_masters_admin_page(cluster):
    """MOONCAKE_CHECK_SERVER / check_server: SGLang waits for the master's /get_all_segments."""
    pool = make_pool_or_skip(False, "page_first")
    b = sglang_backend(cluster, "yuebing", 0, False, pool, check_server=True,
                       master_metrics_port=cluster.metrics_port)
    try:
        assert b.batch_set_v1(hashes(1), slots(pool, [0])) == [True]
    finally:
        b.close()


def test_standalone_storage_through_a_real_client(private_cluster):
    """SGLang's standalone-storage mode: the host pool from Mooncake's tensor allocator, the
    backend joined through a real client (setup_dummy), pages round trip through it."""
    from conftest import start_real_client

    cluster = private_cluster(stores=0)
    real = start_real_client(cluster.master_address)
    made = []
    try:
        extra = {"standalone_storage": True, "client_server_address": real.address,
                 "check_server": False}
        keys = hashes(2)
        src = real_pool(False, "page_first", 21, allocator_type="mooncake")
        writer = sglang_backend(cluster, "mooncake", 0, False, src, **extra)
        made.append(writer)
        assert writer.config.standalone_storage  # SGLang took its setup_dummy path
        assert writer.batch_set_v1(keys, slots(src, [1, 2])) == [True, True]
        dst = real_pool(False, "page_first", 22, allocator_type="mooncake")
        reader = sglang_backend(cluster, "mooncake", 0, False, dst, **extra)
        made.append(reader)
        assert reader.batch_exists(keys) == 2
        assert reader.batch_get_v1(keys, slots(dst, [6, 7])) == [True, True]
        for i in range(2):
            assert page_bytes(dst, 6 + i) == page_bytes(src, 1 + i)
    finally:
        for b in made:
            b.close()
        real.proc.stop()


# ---- SGLang's HiCacheController: its backup and prefetch threads over the backends ------------


@pytest.fixture(scope="module")
def single_rank_runtime():
    """torch.distributed (gloo, one rank) and SGLang's parallel context of one TP rank, which
    the controller reads; this is what SGLang's scheduler sets up before building it."""
    import torch.distributed as dist
    from sglang.srt.runtime_context import get_parallel

    from conftest import free_port

    if not dist.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ["MASTER_PORT"] = str(free_port())
        dist.init_process_group("gloo", rank=0, world_size=1)
    get_parallel().override_permanently(tp_rank=0, tp_size=1, pp_rank=0, pp_size=1,
                                        attn_dcp_size=1, attn_dcp_rank=0)
    yield dist.group.WORLD


def controller(cluster, backend, tp_group, seed):
    """SGLang's HiCacheController over a CPU device pool (MHATokenToKVPool), its allocator and
    an MHA host pool built from it, with `backend` attached at construction."""
    import torch
    from sglang.srt.managers.cache_controller import HiCacheController
    from sglang.srt.mem_cache.allocator.token import TokenToKVPoolAllocator
    from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool
    from sglang.srt.mem_cache.pool_host.mha import MHATokenToKVPoolHost

    device = MHATokenToKVPool(64, 4, torch.float32, 2, 8, 2, "cpu", False)
    allocator = TokenToKVPoolAllocator(64, torch.float32, "cpu", device, False)
    host = MHATokenToKVPoolHost(device._mha_buffer_info(), 2.0, 0, 4, "page_first",
                                pin_memory=False, device="cpu", device_capacity_tokens=64,
                                start_layer=0, end_layer=2)
    host.kv_buffer.copy_(torch.rand(host.kv_buffer.shape,
                                    generator=torch.Generator().manual_seed(seed)))
    extra = client_extra(cluster, backend)
    extra["extra_backend_tag"] = TAG
    return HiCacheController(allocator, host, 4, tp_group, threading.Event(),
                             io_backend="direct", storage_backend=factory_name(backend),
                             model_name=MODEL, storage_backend_extra_config=extra)


@pytest.mark.parametrize("writer,reader", [("yuebing", "yuebing"), ("yuebing", "mooncake"),
                                           ("mooncake", "yuebing")])
def test_cache_controller_backs_up_and_prefetches_pages(cluster, single_rank_runtime, writer,
                                                        reader):
    from sglang.srt.mem_cache.utils import get_storage_hash_str

    tokens = [int(t) for t in uuid.uuid4().bytes[:12]]  # three pages of four tokens
    page_hashes = get_storage_hash_str(tokens, None, page_size=4)
    made = []
    try:
        w = controller(cluster, writer, single_rank_runtime, seed=11)
        made.append(w)
        assert w.page_set_func == w._page_set_zero_copy
        src_indices = w.mem_pool_host.alloc(len(tokens))
        w.write_storage(src_indices, tokens, hash_value=page_hashes)
        done = w.ack_backup_queue.get(timeout=30)
        assert done.completed_tokens == len(tokens)

        r = controller(cluster, reader, single_rank_runtime, seed=12)
        made.append(r)
        assert r.page_get_func == r._page_get_zero_copy
        op = r.prefetch("req-1", tokens)
        # What the scheduler thread does with a storage hit: host slots, then the IO thread.
        assert r.prefetch_hit_queue.get(timeout=30) is op
        assert op.storage_hit_count == len(tokens) and op.hash_value == page_hashes
        op.host_indices = r.alloc_prefetch_host_buffers(op, len(tokens))
        r.prefetch_buffer.put(op)
        completed = 0
        while True:
            ack = r.ack_prefetch_queue.get(timeout=30)
            if ack.completed_tokens is not None:
                completed = ack.completed_tokens
            if ack.completed_req:
                break
        assert completed == len(tokens)
        for page in range(3):
            got = page_bytes(r.mem_pool_host, int(op.host_indices[page * 4]) // 4)
            want = page_bytes(w.mem_pool_host, int(src_indices[page * 4]) // 4)
            assert got == want, page

        # A prefix nobody stored is a miss: no hit, nothing to transfer.
        miss = r.prefetch("req-2", [t ^ 0xFF for t in tokens])
        assert r.prefetch_hit_queue.get(timeout=30) is miss and miss.storage_hit_count == 0
    finally:
        for c in made:
            c.detach_storage_backend()
