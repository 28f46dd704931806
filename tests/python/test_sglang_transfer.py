"""yuebing's TransferEngine under SGLang's PD-disaggregation code, through SGLang's own classes.

SGLang's `MooncakeTransferEngine` wrapper (the shared engine of a prefill or decode worker) and
its PD KV manager (`MooncakeKVManager`, prefill side) run on yuebing's `mooncake.engine` alias over
TCP on 127.0.0.1, moving host buffers standing in for the KV pools (GPU memory is the next issue):
every byte is compared. SGLang's server arguments are resolved from a tiny local model config
(no download), and the prefill manager registers with SGLang's own bootstrap server. Needs the
`sglang` package and torch; skipped with the reason otherwise (scripts/test-integrations runs it).
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import json
from typing import List

import pytest

from conftest import free_port

np = pytest.importorskip("numpy")


def sglang_missing_reason():
    try:
        importlib.import_module("torch")
        importlib.import_module("sglang.srt.distributed.device_communicators."
                                "mooncake_transfer_engine")
        importlib.import_module("sglang.srt.disaggregation.mooncake.conn")
    except Exception as e:  # ImportError or a broken partial install
        return (f"sglang/torch not importable ({type(e).__name__}: {e}); "
                "run scripts/test-integrations")
    return None


pytestmark = pytest.mark.skipif(sglang_missing_reason() is not None,
                                reason=str(sglang_missing_reason()))

LAYERS, PAGES, ITEM = 2, 16, 512  # per layer: K and V buffers of PAGES pages of ITEM bytes


def filled(nbytes: int, seed: int):
    buf = (ctypes.c_uint8 * nbytes)()
    np.frombuffer(buf, dtype=np.uint8)[:] = np.random.default_rng(seed).integers(
        0, 256, nbytes, dtype=np.uint8)
    return buf


@pytest.fixture
def tcp_protocol(monkeypatch):
    # What SGLang reads to pick the transport (rdma by default); MC_FORCE_TCP as SGLang sets it.
    monkeypatch.setenv("MOONCAKE_PROTOCOL", "tcp")
    monkeypatch.setenv("MC_FORCE_TCP", "1")


def test_sglang_transfer_engine_wrapper_moves_and_probes(tcp_protocol):
    from sglang.srt.distributed.device_communicators.mooncake_transfer_engine import \
        MooncakeTransferEngine

    a = MooncakeTransferEngine("127.0.0.1", gpu_id=0)
    b = MooncakeTransferEngine("127.0.0.1", gpu_id=0)
    assert a.get_ib_device() == ""  # MC_FORCE_TCP: no RDMA device selection
    assert a.get_session_id() != b.get_session_id()
    assert a.get_session_id().startswith("127.0.0.1:")
    src, dst = filled(1 << 16, 1), filled(1 << 16, 2)
    s, d = ctypes.addressof(src), ctypes.addressof(dst)
    a.register(s, len(src))
    b.register(d, len(dst))
    assert a.transfer_sync(b.get_session_id(), s, d, 4096) == 0
    assert bytes(dst[:4096]) == bytes(src[:4096])
    assert a.batch_transfer_sync(b.get_session_id(), [s + 4096, s + 8192],
                                 [d + 12288, d + 4096], [4096, 8192]) == 0
    assert bytes(dst[12288:16384]) == bytes(src[4096:8192])
    assert bytes(dst[4096:12288]) == bytes(src[8192:16384])
    # Outside the peer's registered memory: an error code, nothing written, no exception.
    before = bytes(dst)
    assert a.transfer_sync(b.get_session_id(), s, d + len(dst), 4096) < 0
    assert bytes(dst) == before
    assert a.send_probe(b.get_session_id()) == 0
    peer = b.get_session_id()
    b.deregister(d)
    del b
    gc.collect()
    # The peer is gone: the probe really contacts it, so it fails (the handle was cached).
    assert a.send_probe(peer) != 0
    a.deregister(s)


@pytest.fixture
def prefill_server_args(tmp_path, monkeypatch, tcp_protocol):
    """SGLang's ServerArgs of a prefill worker, published as SGLang's scheduler does, with a
    running bootstrap server (SGLang's MooncakeKVBootstrapServer) on a free port."""
    from sglang.srt.disaggregation.mooncake.conn import MooncakeKVBootstrapServer
    from sglang.srt.runtime_context import publish
    from sglang.srt.server_args import ServerArgs

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = tmp_path / "tiny-llama"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
        "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
        "num_hidden_layers": LAYERS, "vocab_size": 256, "max_position_embeddings": 512,
        "rms_norm_eps": 1e-6, "torch_dtype": "float32", "head_dim": 16}))
    port = free_port()
    args = ServerArgs(model_path=str(model), skip_tokenizer_init=True, device="cpu",
                      disaggregation_mode="prefill", disaggregation_transfer_backend="mooncake",
                      disaggregation_bootstrap_port=port, host="127.0.0.1")
    publish(args, role="scheduler")
    MooncakeKVBootstrapServer("127.0.0.1", port)
    return args


def kv_args(ptrs: List[int]):
    """SGLang's KVArgs of an MHA pool of LAYERS layers (K buffers, then V buffers), the fields
    SGLang's prefill worker sets."""
    from sglang.srt.disaggregation.base.conn import KVArgs

    a = KVArgs()
    a.engine_rank, a.pp_rank, a.system_dp_rank, a.rust_http_port = 0, 0, 0, None
    a.kv_cache_dtype_str, a.kv_layout = "float32", None
    a.prefill_start_layer, a.prefill_end_layer = 0, LAYERS
    a.kv_data_ptrs, a.kv_data_lens = ptrs, [PAGES * ITEM] * len(ptrs)
    a.kv_item_lens, a.num_draft_entries, a.kv_layer_ids = [ITEM] * len(ptrs), 0, None
    a.kv_head_num, a.total_kv_head_num, a.page_size = 2, 2, 1
    a.aux_data_ptrs, a.aux_data_lens, a.aux_item_lens = [], [], []
    a.ib_device, a.gpu_id = "", 0
    a.state_types, a.state_data_ptrs, a.state_data_lens, a.state_item_lens = [], [], [], []
    a.state_dim_per_tensor, a.state_slice_outer_counts, a.state_layer_ids = [], [], []
    a.is_hybrid_mla_backend, a.state_conv_shard_groups = False, []
    a.swa_kv_cache_layout, a.mla_compression_ratios = None, None
    return a


def test_pd_kv_manager_sends_kv_pages_to_a_decode_engine(prefill_server_args):
    from sglang.srt.disaggregation.mooncake.conn import MooncakeKVManager
    from sglang.srt.disaggregation.utils import DisaggregationMode
    from sglang.srt.distributed.device_communicators import mooncake_transfer_engine as mte
    from sglang.srt.runtime_context import get_parallel

    mte._mooncake_transfer_engine = None  # the process's shared engine, made afresh here
    mte.init_mooncake_transfer_engine("127.0.0.1", gpu_id=0)
    src = [filled(PAGES * ITEM, 10 + i) for i in range(2 * LAYERS)]
    with get_parallel().override(tp_rank=0, attn_tp_rank=0, attn_cp_rank=0, attn_dp_rank=0,
                                 dp_rank=0, pp_rank=0, attn_dcp_rank=0, pp_group=None):
        manager = MooncakeKVManager(kv_args([ctypes.addressof(b) for b in src]),
                                    DisaggregationMode.PREFILL, prefill_server_args, False)
    try:
        decode = mte.MooncakeTransferEngine("127.0.0.1", gpu_id=0)
        dst = [filled(PAGES * ITEM, 50 + i) for i in range(2 * LAYERS)]
        for b in dst:
            decode.register(ctypes.addressof(b), len(b))
        dst_ptrs = [ctypes.addressof(b) for b in dst]
        # Pages 1, 2, 3 and 9 of the prefill pool into pages 5, 6, 7 and 12 of the decode pool
        # (two contiguous runs), every layer's K and V.
        rc = manager.send_kvcache(decode.get_session_id(), np.array([1, 2, 3, 9], np.int32),
                                  dst_ptrs, np.array([5, 6, 7, 12], np.int32),
                                  manager.executors[0])
        assert rc == 0
        for s, d in zip(src, dst):
            for sp, dp in ((1, 5), (2, 6), (3, 7), (9, 12)):
                assert bytes(d[dp * ITEM:(dp + 1) * ITEM]) == bytes(s[sp * ITEM:(sp + 1) * ITEM])
            untouched = bytes(filled(PAGES * ITEM, 50 + dst.index(d)))
            assert bytes(d[:5 * ITEM]) == untouched[:5 * ITEM]
        # A decode engine that went away: an error code for the transfer, not a hang or crash.
        gone = decode.get_session_id()
        for b in dst:
            decode.deregister(ctypes.addressof(b))
        del decode
        gc.collect()
        rc = manager.send_kvcache(gone, np.array([1], np.int32), dst_ptrs,
                                  np.array([5], np.int32), manager.executors[0])
        assert rc != 0
    finally:
        # Not manager.teardown(): in SGLang 0.5.23 it destroys the zmq context while its own
        # bootstrap thread blocks in recv_multipart, and libzmq aborts the process (about 5 runs
        # in 6 here). The manager's threads are daemons; they end with the process.
        mte._mooncake_transfer_engine = None
