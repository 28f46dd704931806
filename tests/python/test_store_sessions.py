"""Read sessions (batch_get_session_start / batch_get_into_multi_buffer_ranges /
batch_get_session_end, the calls SGLang's direct linker makes) against a real cluster: per-layer
range reads of pages held by one lookup, errors per key, and sessions that end with their lease."""

import time

import numpy as np
import pytest

from conftest import new_store

INVALID_PARAMS = -600
OBJECT_NOT_FOUND = -704
LEASE_EXPIRED = -707

LAYERS = 4
LAYER_BYTES = 1024


def page(seed: int) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, LAYERS * LAYER_BYTES,
                                                dtype=np.uint8).tobytes()


def layer_reads(keys, layer, outs):
    """Arguments of batch_get_into_multi_buffer_ranges for one layer of every page."""
    ptrs = [[outs[k][layer].ctypes.data] for k in range(len(keys))]
    sizes = [[LAYER_BYTES] for _ in keys]
    offsets = [[layer * LAYER_BYTES] for _ in keys]
    return keys, ptrs, sizes, offsets


def test_pages_are_read_layer_by_layer_within_a_session(store):
    keys = [f"sess-page-{i}" for i in range(3)]
    pages = {k: page(i) for i, k in enumerate(keys)}
    assert store.put_batch(keys, [pages[k] for k in keys]) == 0
    outs = [[np.zeros(LAYER_BYTES, dtype=np.uint8) for _ in range(LAYERS)] for _ in keys]
    assert store.batch_get_session_start(keys) == [0, 0, 0]
    for layer in range(LAYERS):
        assert store.batch_get_into_multi_buffer_ranges(
            *layer_reads(keys, layer, outs)) == [LAYER_BYTES] * 3
    assert store.batch_get_session_end(keys) == 0
    for k, key in enumerate(keys):
        assert b"".join(bytes(o) for o in outs[k]) == pages[key]
    # Ended: reads need a session again.
    assert store.batch_get_into_multi_buffer_ranges(*layer_reads(keys, 0, outs)) == \
        [INVALID_PARAMS] * 3
    assert store.batch_get_session_end(keys) == 0  # unknown keys are fine
    # The session's lease was released: a plain remove goes through at once.
    assert store.remove(keys[0]) == 0


def test_session_errors_are_per_key(store):
    assert store.put("sess-a", page(7)) == 0
    out = np.zeros(2 * LAYER_BYTES, dtype=np.uint8)
    assert store.batch_get_session_start(["sess-a", "sess-missing"]) == [0, OBJECT_NOT_FOUND]
    assert store.batch_get_session_start(["sess-a"]) == [0]  # a refresh of a live session
    read = store.batch_get_into_multi_buffer_ranges(
        ["sess-a", "sess-missing", "sess-a", "sess-a"],
        [[out.ctypes.data, out.ctypes.data + LAYER_BYTES], [out.ctypes.data],
         [out.ctypes.data], [out.ctypes.data]],
        [[LAYER_BYTES, LAYER_BYTES], [4], [LAYERS * LAYER_BYTES], [4, 4]],
        [[0, 3 * LAYER_BYTES], [0], [1], [0]])
    # two ranges read; no session; past the object's end; lists that disagree
    assert read == [2 * LAYER_BYTES, INVALID_PARAMS, INVALID_PARAMS, INVALID_PARAMS]
    whole = page(7)
    assert bytes(out) == whole[:LAYER_BYTES] + whole[3 * LAYER_BYTES:]
    assert store.batch_get_into_multi_buffer_ranges(["sess-a"], [], [], []) == [INVALID_PARAMS]
    assert store.batch_get_session_end(["sess-a"]) == 0
    assert store.batch_get_session_start([]) == []


def test_a_session_ends_with_its_lease(private_cluster):
    cluster = private_cluster(stores=1, master_flags=["--default_kv_lease_ttl=300"])
    store = new_store(cluster.master_address)
    try:
        assert store.put("sess-short", page(9)) == 0
        out = np.zeros(LAYER_BYTES, dtype=np.uint8)
        args = (["sess-short"], [[out.ctypes.data]], [[LAYER_BYTES]], [[0]])
        assert store.batch_get_session_start(["sess-short"]) == [0]
        assert store.batch_get_into_multi_buffer_ranges(*args) == [LAYER_BYTES]
        time.sleep(0.5)
        assert store.batch_get_into_multi_buffer_ranges(*args) == [LEASE_EXPIRED]
        assert store.batch_get_into_multi_buffer_ranges(*args) == [INVALID_PARAMS]  # gone
        assert store.batch_get_session_start(["sess-short"]) == [0]  # a new one
        assert store.batch_get_into_multi_buffer_ranges(*args) == [LAYER_BYTES]
        assert bytes(out) == page(9)[:LAYER_BYTES]
        assert store.batch_get_session_end(["sess-short"]) == 0
    finally:
        store.close()
