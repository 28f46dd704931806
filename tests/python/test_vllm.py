"""yuebing under vLLM's own Mooncake code (vLLM 0.33.0) on a real cluster, on vLLM's CPU platform.

vLLM's objects are built the way vLLM builds them (config, v1 Scheduler, worker-side connectors
over KV caches vLLM allocates on the CPU) and KV bytes are compared byte for byte: the
`vllm.distributed.mooncake_store` setup through vLLM's embedding store client, the
MooncakeStoreConnector (save on one instance, lookup and load on another) and the P2P
MooncakeConnector (decode pulls prefill blocks over yuebing's TransferEngine, TCP). Stand-ins only
for GPU-only pieces: the model forward, torch.cuda.Event, torch.accelerator.current_device_index.
Skipped (with the reason) without vllm and torch; scripts/test-integrations installs both.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import free_port, new_store

try:  # the modules under test and what builds them; ImportError or a broken partial install
    import torch
    import vllm.platforms
    from vllm import SamplingParams
    from vllm.config import (CacheConfig, KVTransferConfig, ModelConfig, SchedulerConfig,
                             VllmConfig, set_current_vllm_config)
    from vllm.distributed import parallel_state
    from vllm.distributed.ec_transfer.ec_connector.mooncake_store_embedding import store_client
    from vllm.distributed.ec_transfer.ec_connector.mooncake_store_embedding.data import TensorSpec
    from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory
    from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole
    from vllm.distributed.kv_transfer.kv_connector.v1.mooncake import mooncake_connector  # noqa
    from vllm.distributed.kv_transfer.kv_connector.v1.mooncake.store import connector  # noqa
    from vllm.distributed.kv_transfer.kv_connector.v1.mooncake.store.worker import (
        _get_replica_tiers_by_key)
    from vllm.distributed.mooncake_store import MooncakeStoreConfig
    from vllm.platforms.cpu import CpuPlatform
    from vllm.utils.hashing import sha256
    from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend
    from vllm.v1.attention.backends.utils import resolve_kv_cache_layout
    from vllm.v1.core.kv_cache_planning import get_global_kv_cache_groups, get_kv_cache_configs
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.kv_cache_interface import FullAttentionSpec
    from vllm.v1.outputs import ModelRunnerOutput
    from vllm.v1.request import Request
    from vllm.v1.structured_output import StructuredOutputManager
    from vllm.v1.worker.gpu_worker import init_worker_distributed_environment
    from vllm.v1.worker.utils import allocate_kv_cache
    REASON = None
except Exception as e:
    REASON = f"vllm/torch not importable ({type(e).__name__}: {e}); run scripts/test-integrations"
pytestmark = pytest.mark.skipif(REASON is not None, reason=str(REASON))

BS, LAYERS, HEADS, HEAD_DIM, NUM_BLOCKS, MAX_LEN = 32, 2, 2, 32, 16, 128


def mooncake_json(path: Path, cluster, mode="standalone-store", segment=0) -> str:
    """The file vLLM reads from MOONCAKE_CONFIG_PATH."""
    path.write_text(json.dumps({
        "metadata_server": "P2PHANDSHAKE", "master_server_address": cluster.master_address,
        "protocol": "tcp", "device_name": "", "mode": mode, "global_segment_size": segment,
        "local_buffer_size": "16MB"}))
    return str(path)


@pytest.mark.parametrize("mode,segment", [("standalone-store", 0), ("embedded", "32MB")])
def test_mooncake_store_config_and_store_client(cluster, monkeypatch, tmp_path, mode, segment):
    """MooncakeStoreConfig + setup_mooncake_store in both vLLM topologies, used through vLLM's
    embedding store client: put (multi-buffer, TENSOR), exists, get into a registered buffer,
    remove; a missing key must get a code vLLM deems safe (else it poisons the client)."""
    monkeypatch.setenv("MOONCAKE_CONFIG_PATH", mooncake_json(tmp_path / "mc.json", cluster,
                                                             mode, segment))
    monkeypatch.setenv("VLLM_HOST_IP", "127.0.0.1")
    config = MooncakeStoreConfig.load_from_config()
    assert (config.mode, config.protocol, config.local_buffer_size) == (mode, "tcp", 16 << 20)
    assert config.global_segment_size == (32 << 20 if segment else 0)

    client = store_client.create_mooncake_embedding_store_client(read_buffer_bytes=1 << 20)
    reader = new_store(cluster.master_address)
    key, missing = f"vllm-emb-{uuid.uuid4().hex}", f"vllm-emb-{uuid.uuid4().hex}"
    emb = torch.rand(8, 64, generator=torch.Generator().manual_seed(5))
    try:
        client.put_tensor(key, emb)
        assert client.batch_exists([key, missing]) == [True, False]
        # The object is vLLM's header followed by the tensor's bytes.
        header = store_client._encode_mooncake_tensor_metadata(emb)
        assert reader.get(key) == header + emb.numpy().tobytes()
        spec = TensorSpec(shape=tuple(emb.shape), dtype=str(emb.dtype), nbytes=emb.nbytes)
        got = client.load_tensors({key: spec, missing: spec}, "cpu")
        assert list(got) == [key] and torch.equal(got[key], emb)
        # The gets just leased the object (OBJECT_HAS_LEASE for a plain remove, as upstream).
        assert client.store.remove(key, force=True) == 0 and not client.exists(key)
    finally:
        reader.close()
        client.close()  # unregisters vLLM's buffers; raises unless every call returned 0


def swap_platform(new):
    """Make `new` vLLM's platform, also in the vllm modules that imported the old one. vLLM
    resolves it once per process; with no GPU and no VLLM_TARGET_DEVICE it is UnspecifiedPlatform,
    e.g. when SGLang or LMCache imported vLLM earlier in the same pytest run."""
    old, vllm.platforms._current_platform = vllm.platforms._current_platform, new
    for name, module in list(sys.modules.items()):
        if old is not None and name.startswith("vllm") \
                and getattr(module, "__dict__", {}).get("current_platform") is old:
            module.current_platform = new
    return old


@pytest.fixture(scope="module")
def vllm_env(cluster):
    """What a vLLM CPU worker process sets up: environment, CPU platform, world-size-1 process
    groups (gloo), and a tiny local model config (Llama: 2 layers, 2 KV heads of 32)."""
    tmp = tempfile.mkdtemp(prefix="yb-vllm-")  # short: it holds vLLM's ZMQ ipc sockets
    Path(tmp, "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
        "intermediate_size": 128, "num_attention_heads": HEADS, "num_key_value_heads": HEADS,
        "head_dim": HEAD_DIM, "num_hidden_layers": LAYERS, "vocab_size": 1024,
        "max_position_embeddings": 256, "torch_dtype": "float32"}))
    mp = pytest.MonkeyPatch()
    mp.setenv("VLLM_HOST_IP", "127.0.0.1")
    mp.setenv("VLLM_RPC_BASE_PATH", tmp)
    mp.setenv("MOONCAKE_CONFIG_PATH", mooncake_json(Path(tmp, "mc.json"), cluster))
    # torch.cuda.Event: the store worker fences its block reads on one recorded after the
    # forward; a CPU forward is complete when it returns.
    mp.setattr(torch.cuda, "Event", lambda: SimpleNamespace(record=lambda *a: None,
                                                            synchronize=lambda: None))
    mp.setattr(torch.accelerator, "current_device_index", lambda: 0)  # no CUDA device to ask
    old_platform = swap_platform(CpuPlatform())
    env = SimpleNamespace(model=tmp, engines=[])
    try:
        config = vllm_config(env, None, None)
        with set_current_vllm_config(config):
            init_worker_distributed_environment(config, 0, f"tcp://127.0.0.1:{free_port()}", 0,
                                                "gloo")
        init_none_hash(sha256)
        yield env
    finally:
        for engine in env.engines:
            # The store connector closes its yuebing client; vLLM's P2P connector leaves its
            # worker (loops, bootstrap server) to __del__ (its shutdown() blocks in zmq term()).
            engine.worker.shutdown()
            engine.sched.shutdown()
        parallel_state.destroy_model_parallel()
        parallel_state.destroy_distributed_environment()
        swap_platform(old_platform)
        mp.undo()
        shutil.rmtree(tmp, ignore_errors=True)


def vllm_config(env, connector, role, engine_id=None, **extra):
    return VllmConfig(
        model_config=ModelConfig(model=env.model, skip_tokenizer_init=True, dtype="float32",
                                 max_model_len=MAX_LEN),
        cache_config=CacheConfig(block_size=BS, enable_prefix_caching=True,
                                 num_gpu_blocks_override=NUM_BLOCKS),
        scheduler_config=SchedulerConfig(max_num_batched_tokens=MAX_LEN, max_num_seqs=4,
                                         max_model_len=MAX_LEN, is_encoder_decoder=False),
        kv_transfer_config=connector and KVTransferConfig(
            kv_connector=connector, kv_role=role, engine_id=engine_id,
            kv_connector_extra_config=extra))


def start_engine(env, connector, role, **extra):
    """One vLLM instance as its engine core and worker build it: KV cache config from the layers'
    specs, layout resolved for the CPU attention backend, KV caches allocated by vLLM on the CPU,
    the worker-side connector registered over them, and a v1 Scheduler (which builds the
    scheduler-side connector)."""
    config = vllm_config(env, connector, role, **extra)
    specs = {f"model.layers.{i}.self_attn.attn": FullAttentionSpec(
        block_size=BS, num_kv_heads=HEADS, head_size=HEAD_DIM, dtype=torch.float32)
        for i in range(LAYERS)}
    layouts = [[layout.name for layout in CPUAttentionBackend.supported_kv_cache_layouts()]]
    resolve_kv_cache_layout(config, layouts, list(specs.values()))
    kv_cache_config = get_kv_cache_configs(config, [specs], [1 << 30],
                                           get_global_kv_cache_groups(config, [specs]))[0]
    config.cache_config.num_gpu_blocks = kv_cache_config.num_blocks
    kv = allocate_kv_cache(kv_cache_config, torch.device("cpu"),
                           config.cache_config.get_resolved_kv_cache_layout())
    with set_current_vllm_config(config):
        worker = KVConnectorFactory.create_connector(config, KVConnectorRole.WORKER,
                                                     kv_cache_config)
        worker.register_kv_caches(kv)
        sched = Scheduler(vllm_config=config, kv_cache_config=kv_cache_config, block_size=BS,
                          structured_output_manager=StructuredOutputManager(config))
    env.engines.append(SimpleNamespace(kv=kv, worker=worker, sched=sched))
    return env.engines[-1]


def request(rid, prompt, max_tokens=4, params=None):
    sampling = SamplingParams(max_tokens=max_tokens)
    sampling.update_from_generation_config({}, 0)
    r = Request(request_id=rid, prompt_token_ids=list(prompt), sampling_params=sampling,
                pooling_params=None, block_hasher=get_request_block_hasher(BS, sha256))
    r.kv_transfer_params = params
    return r


def forward(engine, blocks, seed):
    """Stand-in for the model forward: the attention kernels write every layer's K/V of the
    scheduled tokens into these blocks (here: random values)."""
    gen = torch.Generator().manual_seed(seed)
    for cache in engine.kv.values():
        for b in blocks:
            cache[b].copy_(torch.rand(cache[b].shape, generator=gen))


def block_bytes(engine, block) -> bytes:
    """One block of every layer, in layer order (the value the store connector puts per key)."""
    return b"".join(cache[block].contiguous().numpy().tobytes() for cache in engine.kv.values())


def fill(engine, value):
    for cache in engine.kv.values():
        cache.fill_(value)


def wait_received(worker, rid, timeout=20.0):
    deadline = time.monotonic() + timeout
    while rid not in (worker.get_finished(set())[1] or ()):
        assert time.monotonic() < deadline, f"{rid}: load not finished in {timeout}s"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def store_engines(vllm_env):
    """Two instances with MooncakeStoreConnector (each its own yuebing client and lookup port)."""
    return (start_engine(vllm_env, "MooncakeStoreConnector", "kv_both", lookup_rpc_port=1,
                         enable_group_semantics="true"),
            start_engine(vllm_env, "MooncakeStoreConnector", "kv_both", lookup_rpc_port=2))


def save_prompt(engine, rid, prompt, seed):
    """One prefill step: schedule, forward, wait_for_save (the send thread: batch_is_exist, then
    batch_put_from_multi_buffers of the missing full blocks). Returns blocks and keys."""
    engine.sched.add_request(request(rid, prompt))
    out = engine.sched.schedule()
    blocks = out.scheduled_new_reqs[0].block_ids[0]
    forward(engine, blocks, seed)
    engine.worker.bind_connector_metadata(out.kv_connector_metadata)
    engine.worker.wait_for_save()
    engine.worker.connector_worker.kv_send_thread.request_queue.join()
    engine.worker.clear_connector_metadata()
    db = engine.worker.connector_worker.token_dbs[0]
    return blocks, [db.key_for(h) for h in engine.sched.requests[rid].block_hashes]


def test_store_connector_saves_and_another_instance_loads(cluster, store_engines):
    """A saves a prompt's full blocks (with ReplicateConfig.group_ids); yuebing holds exactly their
    bytes; B's scheduler finds them (ZMQ lookup, batch_is_exist) and B's worker loads them into its
    own blocks (batch_get_into_multi_buffers) byte for byte, touching nothing else."""
    a, b = store_engines
    prompt = list(range(100, 180))  # 80 tokens: two full blocks of 32 are saved, not the tail
    blocks_a, keys = save_prompt(a, "save", prompt, seed=1)
    assert len(keys) == 2
    reader = new_store(cluster.master_address)
    try:
        assert reader.batch_is_exist(keys) == [1, 1]
        for key, block in zip(keys, blocks_a):
            assert reader.get(key) == block_bytes(a, block)
    finally:
        reader.close()
    # vLLM's tier log (VLLM_MOONCAKE_STORE_TIER_LOG) reads yuebing's replica descriptors.
    tiers = _get_replica_tiers_by_key(a.worker.connector_worker.store, keys)
    assert tiers == dict.fromkeys(keys, "memory")

    fill(b, -1.0)
    b.sched.add_request(request("load", prompt))
    out = b.sched.schedule()  # the request waits for its remote KV; the load is in the metadata
    (meta,) = out.kv_connector_metadata.requests
    assert meta.load_spec.kvpool_cached_tokens == 2 * BS
    b.worker.bind_connector_metadata(out.kv_connector_metadata)
    b.worker.start_load_kv(None)
    wait_received(b.worker, "load")
    assert b.worker.get_block_ids_with_load_errors() == set()
    b.worker.clear_connector_metadata()
    blocks_b = meta.block_ids[0]
    assert len(blocks_b) == 2
    for block_a, block_b in zip(blocks_a, blocks_b):
        assert block_bytes(b, block_b) == block_bytes(a, block_a)
    untouched = [blk for blk in range(NUM_BLOCKS) if blk not in blocks_b]
    assert all((cache[untouched] == -1.0).all() for cache in b.kv.values())

    # A prompt sharing only the first block hits that block only.
    fork = prompt[:BS] + list(range(500, 548))
    assert b.sched.connector.get_num_new_matched_tokens(request("fork", fork), 0) == (BS, True)


def test_store_connector_reset_cache_empties_the_store(cluster, store_engines):
    """reset_prefix_cache(reset_connector=True): A's scheduler-side connector sends RESET over
    vLLM's ZMQ admin channel, A's worker drains its puts and calls remove_all(force=True), and
    B's lookup then misses."""
    a, b = store_engines
    prompt = list(range(200, 280))
    _, keys = save_prompt(a, "to-reset", prompt, seed=2)
    assert b.sched.connector.get_num_new_matched_tokens(request("hit", prompt), 0) == (2 * BS, True)
    assert a.sched.connector.reset_cache() is True
    assert b.sched.connector.get_num_new_matched_tokens(request("miss", prompt), 0) == (0, False)
    reader = new_store(cluster.master_address)
    try:
        assert reader.batch_is_exist(keys) == [0, 0]
    finally:
        reader.close()


def test_p2p_connector_decode_pulls_prefill_blocks(vllm_env, monkeypatch):
    """MooncakeConnector P/D: the prefill computes the prompt (max_tokens=1, as a P/D proxy sends
    it) and holds the finished request's blocks; the decode worker finds the prefill worker via
    its bootstrap server, sends its layout over ZMQ, and the prefill writes the blocks into the
    decoder's KV cache with yuebing's TransferEngine (batch_transfer_sync_write), byte for byte."""
    port = free_port()
    monkeypatch.setenv("VLLM_MOONCAKE_BOOTSTRAP_PORT", str(port))
    p = start_engine(vllm_env, "MooncakeConnector", "kv_producer", engine_id="prefill",
                     mooncake_protocol="tcp", num_workers=2)
    d = start_engine(vllm_env, "MooncakeConnector", "kv_consumer", engine_id="decode",
                     mooncake_protocol="tcp")
    prompt = list(range(300, 380))  # 80 tokens: 3 blocks, the partial last one included

    def step(engine, out):
        engine.worker.bind_connector_metadata(out.kv_connector_metadata)
        engine.worker.start_load_kv(None)

    p.sched.add_request(request("p", prompt, max_tokens=1,
                                params={"do_remote_decode": True, "transfer_id": "xfer-1"}))
    out = p.sched.schedule()
    blocks_p = out.scheduled_new_reqs[0].block_ids[0]
    step(p, out)
    forward(p, blocks_p, seed=3)
    p.worker.clear_connector_metadata()
    p.sched.update_from_output(out, ModelRunnerOutput(
        req_ids=["p"], req_id_to_index={"p": 0}, sampled_token_ids=[[1]]))
    step(p, p.sched.schedule())  # request_finished: its blocks now wait for the decoder
    p.worker.clear_connector_metadata()

    fill(d, -1.0)
    d.sched.add_request(request("d", prompt, params={
        "do_remote_prefill": True, "remote_engine_id": "prefill", "transfer_id": "xfer-1",
        "remote_bootstrap_addr": f"http://127.0.0.1:{port}"}))
    out = d.sched.schedule()
    pull = out.kv_connector_metadata.reqs_to_recv["prefill"]["d"]
    step(d, out)
    wait_received(d.worker, "d")
    assert d.worker.get_block_ids_with_load_errors() == set()
    d.worker.clear_connector_metadata()
    assert p.worker.get_finished(set())[0] == {"p"}  # the prefill may free its blocks now
    blocks_d = pull.local_block_ids[0]
    assert len(blocks_d) == len(blocks_p) == 3
    for block_p, block_d in zip(blocks_p, blocks_d):
        assert block_bytes(d, block_d) == block_bytes(p, block_p)
