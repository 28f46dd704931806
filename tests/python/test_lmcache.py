"""yuebing under LMCache 0.5.6, through LMCache's own classes, on a real cluster.

LMCache reaches Mooncake in three places; each is built here as LMCache builds it, over the
`mooncake` alias (yuebing), and data is compared byte for byte:

1. the `mooncakestore` remote connector, built by LMCache's `RemoteBackend` / `CreateConnector`
   from a `mooncakestore://` URL, over LMCache's own `LocalCPUBackend` memory objects (CPU);
2. the `mooncake_store` L2 adapter (multi-process mode): LMCache's C++ extension
   `lmcache.lmcache_mooncake`, linked against upstream Mooncake's C++ client (`RealClient`), not
   the `mooncake` Python package. PyPI's wheel does not ship it, so that test is skipped with the
   exact import error (built, it would speak upstream's coro_rpc; yuebing's master speaks gRPC);
3. the `mooncake_te` transfer channel: two channels (two processes) moving host buffers over
   yuebing's TransferEngine (TCP, P2PHANDSHAKE).

Needs torch and lmcache, skipped with the reason without them; scripts/test-integrations
installs both (exact pins) and runs this file.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib
import json
import subprocess
import sys
import threading
import time
import uuid

import pytest

from conftest import free_port, new_store


def lmcache_missing_reason():
    try:
        importlib.import_module("torch")
        for mod in ("storage_backend.remote_backend",
                    "storage_backend.connector.mooncakestore_connector",
                    "distributed.l2_adapters.mooncake_store_l2_adapter",
                    "distributed.transfer_channel.impl.mooncake_te_impl"):
            importlib.import_module("lmcache.v1." + mod)
    except Exception as e:  # ImportError or a broken partial install
        return (f"lmcache/torch not importable ({type(e).__name__}: {e}); "
                "run scripts/test-integrations")
    return None


pytestmark = pytest.mark.skipif(lmcache_missing_reason() is not None,
                                reason=str(lmcache_missing_reason()))

MODEL = "yb-test/lmcache-model"
CHUNK = 16                       # tokens per LMCache chunk
KV_SHAPE = (2, 2, CHUNK, 2, 8)   # (layers, k/v, chunk, heads, head_size): 2048 B bf16 per chunk
TOKEN_BYTES = 128                # 2 (k/v) * 2 layers * 16 (heads*head_size) * 2 B


@pytest.fixture(scope="module")
def loop():
    """The asyncio loop on its own thread, as LMCacheEngine runs its storage backends."""
    lp = asyncio.new_event_loop()
    t = threading.Thread(target=lp.run_forever, daemon=True)
    t.start()
    yield lp
    lp.call_soon_threadsafe(lp.stop)
    t.join(5)


def run(loop, coro):
    return asyncio.run_coroutine_threadsafe(coro, loop).result(30)


def client_settings(cluster) -> dict:
    return {"local_hostname": "127.0.0.1", "metadata_server": "P2PHANDSHAKE", "protocol": "tcp",
            "master_server_address": cluster.master_address, "global_segment_size": 0,
            "local_buffer_size": 16 << 20}


def engine(extra: dict):
    """LMCache's engine config and metadata for a tiny bf16 model, and its LocalCPUBackend
    (LMCache's CPU allocator: the buffers the connector registers and reads into)."""
    import torch
    from lmcache.v1.config import LMCacheEngineConfig
    from lmcache.v1.metadata import LMCacheMetadata
    from lmcache.v1.storage_backend.local_cpu_backend import LocalCPUBackend

    cfg = LMCacheEngineConfig.from_defaults(
        chunk_size=CHUNK, local_cpu=False, max_local_cpu_size=0.05, remote_serde="naive",
        remote_url="mooncakestore://127.0.0.1:50051/", extra_config=extra)
    md = LMCacheMetadata(model_name=MODEL, world_size=1, local_world_size=1, worker_id=0,
                         local_worker_id=0, kv_dtype=torch.bfloat16, kv_shape=KV_SHAPE,
                         chunk_size=CHUNK)
    return cfg, md, LocalCPUBackend(cfg, md)


def new_keys(n: int):
    import torch
    from lmcache.utils import CacheEngineKey

    return [CacheEngineKey(MODEL, 1, 0, uuid.uuid4().int >> 65, torch.bfloat16) for _ in range(n)]


def chunk(backend, md, tokens: int):
    """A KV chunk of `tokens` tokens in LMCache's allocator, filled with random bytes."""
    import torch
    from lmcache.v1.memory_management import MemoryFormat

    obj = backend.allocate(md.get_shapes(tokens), md.get_dtypes(), MemoryFormat.KV_2LTD)
    assert obj is not None
    obj.raw_tensor.view(torch.uint8)[:obj.get_size()].copy_(
        torch.randint(0, 256, (obj.get_size(),), dtype=torch.uint8))
    return obj


@pytest.mark.parametrize("save_chunk_meta", [True, False], ids=["put_parts", "zero_copy"])
def test_remote_backend_round_trip(cluster, loop, save_chunk_meta):
    """LMCache's RemoteBackend builds the connector from its URL (registering LMCache's CPU
    buffer), writes two full chunks and a 5-token one; a second backend (another client, as a
    decode instance) finds and reads them. save_chunk_meta=True: put_parts / batch_get_buffer
    with LMCache's 28-byte header; False: put_from / batch_put_from / batch_get_into, where
    LMCache sizes the partial chunk from the byte count batch_get_into returns. A plain yuebing
    client then reads what LMCache stored in the cluster."""
    from lmcache.v1.protocol import RemoteMetadata
    from lmcache.v1.storage_backend.connector.mooncakestore_connector import (
        MooncakestoreConnector)
    from lmcache.v1.storage_backend.remote_backend import RemoteBackend

    extra = dict(client_settings(cluster), save_chunk_meta=save_chunk_meta, transfer_timeout=10)
    backends = []
    try:
        cfg, md, cpu = engine(extra)
        writer = RemoteBackend(cfg, md, loop, cpu)
        backends.append(writer)
        assert writer.connection is not None, "LMCache could not build the connector"
        inner = writer.connection._connector  # inside LMCache's InstrumentedRemoteConnector
        assert isinstance(inner, MooncakestoreConnector)
        assert inner.registered_buffer_ptr is not None  # register_buffer returned 0
        header_bytes = inner.remote_metadata_bytes
        keys, miss = new_keys(3), new_keys(1)[0]
        objs = [chunk(cpu, md, CHUNK), chunk(cpu, md, CHUNK), chunk(cpu, md, 5)]
        want = [bytes(o.byte_array) for o in objs]
        assert [len(w) for w in want] == [CHUNK * TOKEN_BYTES] * 2 + [5 * TOKEN_BYTES]

        done = threading.Semaphore(0)
        writer.batched_submit_put_task(keys[:2], objs[:2],
                                       on_complete_callback=lambda k: done.release())
        writer.submit_put_task(keys[2], objs[2], on_complete_callback=lambda k: done.release())
        assert all(done.acquire(timeout=10) for _ in range(3))
        assert writer.put_failed_count == 0

        cfg2, md2, cpu2 = engine(extra)
        reader = RemoteBackend(cfg2, md2, loop, cpu2)
        backends.append(reader)
        assert [bool(reader.contains(k)) for k in keys + [miss]] == [True, True, True, False]
        got = reader.batched_get_blocking(keys + [miss])
        assert got[3] is None
        for g, w, tokens in zip(got[:3], want, (CHUNK, CHUNK, 5)):
            assert g is not None and bytes(g.byte_array) == w
            assert list(g.get_shape()) == [2, 2, tokens, 16]
            g.ref_count_down()

        plain = new_store(cluster.master_address)
        try:
            for k, w in zip(keys, want):
                raw = plain.get(k.to_string())
                if save_chunk_meta:
                    assert len(raw) == header_bytes + len(w) and raw[header_bytes:] == w
                    assert RemoteMetadata.deserialize(raw[:header_bytes]).length == len(w)
                else:
                    assert raw == w
        finally:
            plain.close()
    finally:
        for b in backends:
            b.close()


def test_connector_from_mooncake_config_path(cluster, loop, tmp_path, monkeypatch):
    """LMCache's other config route: a JSON file named by MOONCAKE_CONFIG_PATH with
    `mooncake_`-prefixed keys, through CreateConnector (what RemoteBackend calls). The client
    gives a 16 MB segment and sets mooncake_prefer_local_alloc (preferred_segment =
    store.get_hostname()): the replica must land there. Also exists_sync, LMCache's prefix-hit
    count (batched_async_contains stops at the first miss) and a get of a miss."""
    from lmcache.v1.storage_backend.connector import CreateConnector

    settings = dict(client_settings(cluster), global_segment_size=16 << 20)
    path = tmp_path / "mooncake.json"
    path.write_text(json.dumps({**{"mooncake_" + k: v for k, v in settings.items()},
                                "mooncake_prefer_local_alloc": True, "transfer_timeout": 10}))
    monkeypatch.setenv("MOONCAKE_CONFIG_PATH", str(path))
    cfg, md, cpu = engine({"save_chunk_meta": False})
    conn = CreateConnector(cfg.remote_url, loop, cpu, cfg, md)
    try:
        inner = conn._connector
        own_segment = inner.store.get_hostname()
        assert inner.replica_config.preferred_segment == own_segment
        keys = new_keys(3)
        objs = [chunk(cpu, md, CHUNK) for _ in keys]
        run(loop, conn.put(keys[0], objs[0]))
        run(loop, conn.put(keys[2], objs[2]))
        assert conn.exists_sync(keys[0]) and not conn.exists_sync(keys[1])
        assert run(loop, conn.batched_async_contains("lookup-1", keys)) == 1
        got = run(loop, conn.batched_get(keys))
        assert got[1] is None
        assert bytes(got[0].byte_array) == bytes(objs[0].byte_array)
        assert bytes(got[2].byte_array) == bytes(objs[2].byte_array)

        plain = new_store(cluster.master_address)
        try:
            replicas = plain.get_replica_desc(keys[0].to_string())
            assert [r.get_memory_descriptor().buffer_descriptor.transport_endpoint
                    for r in replicas] == [own_segment]
        finally:
            plain.close()
    finally:
        run(loop, conn.close())


def test_l2_adapter_mooncake_store(cluster):
    """LMCache's CLI helpers parse `--l2-adapter` JSON into MooncakeStoreL2AdapterConfig
    (setup keys forwarded as strings, LMCache-only keys kept out); LMCache's factory then builds
    the adapter, the C++ extension lmcache.lmcache_mooncake. Without it the factory raises and
    the test is skipped with that error."""
    from lmcache.v1.distributed.l2_adapters.base import L2AdapterInterface
    from lmcache.v1.distributed.l2_adapters.config import (add_l2_adapters_args,
                                                          parse_args_to_l2_adapters_config)
    from lmcache.v1.distributed.l2_adapters.factory import create_l2_adapter_from_registry
    from lmcache.v1.distributed.l2_adapters.mooncake_store_l2_adapter import (
        MooncakeStoreL2AdapterConfig)

    spec = {"type": "mooncake_store", "num_workers": 2, **client_settings(cluster)}
    args = add_l2_adapters_args(argparse.ArgumentParser()).parse_args(
        ["--l2-adapter", json.dumps(spec)])
    (cfg,) = parse_args_to_l2_adapters_config(args).adapters
    assert isinstance(cfg, MooncakeStoreL2AdapterConfig) and cfg.num_workers == 2
    assert cfg.setup_config == {k: str(v) for k, v in client_settings(cluster).items()}
    try:
        adapter = create_l2_adapter_from_registry(cfg)
    except RuntimeError as e:
        cause = e.__cause__
        if isinstance(cause, ImportError) and "lmcache_mooncake" in str(cause):
            pytest.skip(f"LMCache's mooncake_store L2 adapter is its C++ extension, absent from "
                        f"the PyPI wheel: {type(cause).__name__}: {cause} -> RuntimeError: {e}")
        raise
    try:
        assert isinstance(adapter, L2AdapterInterface)
    finally:
        adapter.close()


# The peer: a mooncake_te channel over a seeded host buffer. On stdin "<url> <offset> <n>" it
# reads from that peer through the client the handshake registered, and prints a hash.
PEER = r"""
import hashlib, sys, time, torch
from lmcache.v1.distributed.internal_api import L1MemoryDesc
from lmcache.v1.distributed.transfer_channel.api import TransferChannelAddress as Addr
from lmcache.v1.distributed.transfer_channel.factory import create_transfer_channel_context
import lmcache.v1.distributed.transfer_channel.impl.mooncake_te_impl  # registers mooncake_te
url, size, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
buf = torch.randint(0, 256, (size,), dtype=torch.uint8,
                    generator=torch.Generator().manual_seed(seed))
ctx = create_transfer_channel_context("mooncake_te", L1MemoryDesc(buf.data_ptr(), size, 4096),
                                      listen_url=url, advertise_url=url)
print("READY", flush=True)
peer, offset, n = sys.stdin.readline().split()
client = ctx.get_transfer_channel_client(peer)
task = client.submit_read([Addr(0, int(n))], [Addr(int(offset), int(n))])
while not (res := client.query_read_status(task)).finished:
    time.sleep(0.001)
print("READ", res.succeeded_mask, ctx.get_num_connected_clients(),
      hashlib.sha256(buf[:int(n)].numpy().tobytes()).hexdigest(), flush=True)
ctx.close()
"""


def read_all(client, local, remote, timeout=10.0):
    task = client.submit_read(local, remote)
    deadline = time.monotonic() + timeout
    while not (res := client.query_read_status(task)).finished:
        assert time.monotonic() < deadline, "transfer did not finish"
        time.sleep(0.001)
    return res.succeeded_mask


def test_transfer_channel_between_processes():
    """Two LMCache mooncake_te channels in two processes: after the ZMQ handshake (session ids,
    buffer bases) this process reads two ranges of the peer's buffer (one of 256 KiB) and the
    peer reads one of ours through the client the handshake registered; all byte for byte. A
    read past the peer's registered region fails (status -1 -> succeeded_mask [False]), as with
    upstream's TCP transport, which validates remote addresses."""
    import torch
    from lmcache.v1.distributed.internal_api import L1MemoryDesc
    from lmcache.v1.distributed.transfer_channel.api import TransferChannelAddress as Addr
    from lmcache.v1.distributed.transfer_channel.factory import create_transfer_channel_context

    size, seed = 1 << 20, 7
    peer_url, our_url = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    peer = subprocess.Popen([sys.executable, "-c", PEER, peer_url, str(size), str(seed)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    ctx = None
    try:
        line = ""
        while line.strip() != "READY":
            line = peer.stdout.readline()
            assert line, f"peer channel exited with {peer.wait(10)} before READY"
        theirs, ours = (torch.randint(0, 256, (size,), dtype=torch.uint8,
                                      generator=torch.Generator().manual_seed(s))
                        for s in (seed, seed + 1))
        expected_ours = ours.clone()
        ctx = create_transfer_channel_context(
            "mooncake_te", L1MemoryDesc(ours.data_ptr(), size, 4096),
            listen_url=our_url, advertise_url=our_url)
        client = ctx.get_transfer_channel_client(peer_url)

        local = ctx.get_transfer_channel_address([(0, 4096), (8192, 256 << 10)])
        remote = [Addr(65536, 4096), Addr(300000, 256 << 10)]
        assert read_all(client, local, remote) == [True, True]
        assert torch.equal(ours[:4096], theirs[65536:65536 + 4096])
        assert torch.equal(ours[8192:8192 + (256 << 10)], theirs[300000:300000 + (256 << 10)])
        assert torch.equal(ours[8192 + (256 << 10):], expected_ours[8192 + (256 << 10):])

        assert read_all(client, [Addr(0, 4096)], [Addr(size - 2048, 4096)]) == [False]

        n, offset = 100000, size - 100000   # the peer reads the tail of our buffer
        peer.stdin.write(f"{our_url} {offset} {n}\n")
        peer.stdin.flush()
        out, _ = peer.communicate(timeout=30)
        assert peer.returncode == 0, out
        read = [ln for ln in out.splitlines() if ln.startswith("READ ")]
        assert read == [f"READ [True] 1 "
                        f"{hashlib.sha256(ours[offset:].numpy().tobytes()).hexdigest()}"], out
    finally:
        if peer.poll() is None:
            peer.kill()
            peer.wait(10)
        if ctx is not None:
            ctx.close()
