"""Put sessions (batch_put_session_start / batch_put_from_multi_buffer_ranges /
batch_put_session_end / batch_put_session_revoke, the layer-by-layer writer's calls) against a
real cluster: pages written one layer at a time by another client's readers byte for byte, errors
per key, objects that stay invisible until the end, and ends refused while bytes are missing."""

import threading

import numpy as np

from conftest import new_store
from yuebing.store import ReplicateConfig

INVALID_PARAMS = -600
OBJECT_NOT_FOUND = -704
OBJECT_ALREADY_EXISTS = -705

LAYERS = 4
LAYER_BYTES = 1024
PAGE_BYTES = LAYERS * LAYER_BYTES


def pages_for(keys, seed=0):
    return {k: np.random.default_rng(seed + i).integers(0, 256, PAGE_BYTES, dtype=np.uint8)
            for i, k in enumerate(keys)}


def layer_writes(keys, layer, pages):
    """Arguments of batch_put_from_multi_buffer_ranges writing one layer of every page."""
    ptrs = [[pages[k].ctypes.data + layer * LAYER_BYTES] for k in keys]
    sizes = [[LAYER_BYTES] for _ in keys]
    offsets = [[layer * LAYER_BYTES] for _ in keys]
    return keys, ptrs, sizes, offsets


def test_pages_written_layer_by_layer_are_read_whole_by_another_client(store, make_store):
    keys = [f"psess-page-{i}" for i in range(3)]
    pages = pages_for(keys)
    assert store.batch_put_session_start(keys, [PAGE_BYTES] * 3) == [0, 0, 0]
    reader = make_store()
    # Layers written in reverse order: a session puts bytes where their offsets say.
    for layer in reversed(range(LAYERS)):
        assert store.batch_put_from_multi_buffer_ranges(
            *layer_writes(keys, layer, pages)) == [LAYER_BYTES] * 3
        assert reader.batch_is_exist(keys) == [0, 0, 0]  # invisible until the end
    assert store.batch_put_session_end(keys) == [0, 0, 0]
    assert reader.get_batch(keys) == [pages[k].tobytes() for k in keys]
    # Ended: the keys have no session any more.
    assert store.batch_put_from_multi_buffer_ranges(*layer_writes(keys, 0, pages)) == \
        [INVALID_PARAMS] * 3
    assert store.batch_put_session_end(keys) == [INVALID_PARAMS] * 3
    assert store.batch_put_session_revoke(keys) == [INVALID_PARAMS] * 3


def test_one_call_may_write_several_ranges_of_a_key_from_several_buffers(store):
    key = "psess-multi"
    page = pages_for([key], seed=10)[key]
    halves = [page[:PAGE_BYTES // 2].copy(), page[PAGE_BYTES // 2:].copy()]
    assert store.batch_put_session_start([key], [PAGE_BYTES]) == [0]
    assert store.batch_put_from_multi_buffer_ranges(
        [key], [[halves[1].ctypes.data, halves[0].ctypes.data]],
        [[PAGE_BYTES // 2, PAGE_BYTES // 2]], [[PAGE_BYTES // 2, 0]]) == [PAGE_BYTES]
    assert store.batch_put_session_end([key]) == [0]
    assert store.get(key) == page.tobytes()


def test_an_end_before_every_byte_is_written_is_refused_and_the_session_stays(store):
    key = "psess-partial"
    page = pages_for([key], seed=20)[key]
    assert store.batch_put_session_start([key], [PAGE_BYTES]) == [0]
    for layer in (0, 1, 3):  # layer 2 missing
        assert store.batch_put_from_multi_buffer_ranges(
            *layer_writes([key], layer, {key: page})) == [LAYER_BYTES]
    assert store.batch_put_session_end([key]) == [INVALID_PARAMS]
    assert store.is_exist(key) == 0  # never shown with bytes nobody wrote
    # Overlapping writes count once; the missing layer completes the object.
    assert store.batch_put_from_multi_buffer_ranges(
        [key], [[page.ctypes.data + LAYER_BYTES]], [[2 * LAYER_BYTES]], [[LAYER_BYTES]]) == \
        [2 * LAYER_BYTES]
    assert store.batch_put_session_end([key]) == [0]
    assert store.get(key) == page.tobytes()


def test_errors_are_per_key(store):
    page = pages_for(["x"], seed=30)["x"]
    assert store.put("psess-exists", b"old value") == 0
    assert store.batch_put_session_start(
        ["psess-a", "psess-exists", "", "psess-zero", "psess-a"],
        [PAGE_BYTES, PAGE_BYTES, PAGE_BYTES, 0, PAGE_BYTES]) == \
        [0, OBJECT_ALREADY_EXISTS, INVALID_PARAMS, INVALID_PARAMS, INVALID_PARAMS]
    assert store.batch_put_session_start(["psess-a"], [PAGE_BYTES]) == [INVALID_PARAMS]
    assert store.batch_put_session_start(["psess-b"], [1]) == [0]
    ptr = page.ctypes.data
    written = store.batch_put_from_multi_buffer_ranges(
        ["psess-a", "psess-a", "psess-none", "psess-b", "psess-a"],
        [[ptr], [ptr], [ptr], [ptr], [ptr, ptr]],
        [[PAGE_BYTES], [PAGE_BYTES + 1], [1], [2], [1]],  # past the end; no session; past the end
        [[0], [0], [0], [0], [0, 1]])                     # and lists that disagree
    assert written == [PAGE_BYTES, INVALID_PARAMS, INVALID_PARAMS, INVALID_PARAMS, INVALID_PARAMS]
    assert store.batch_put_from_multi_buffer_ranges(["psess-b"], [[0]], [[1]], [[0]]) == \
        [INVALID_PARAMS]  # no source
    assert store.batch_put_session_end(["psess-a", "psess-b", "psess-none"]) == \
        [0, INVALID_PARAMS, INVALID_PARAMS]
    assert store.get("psess-a") == page.tobytes()
    assert store.get("psess-exists") == b"old value"  # kept
    assert store.batch_put_session_revoke(["psess-b", "psess-b"]) == [0, 0]
    assert store.is_exist("psess-b") == 0
    # A revoked key may be put again at once.
    assert store.put("psess-b", b"again") == 0


def test_a_revoked_key_starts_again_and_a_config_places_the_replicas(store, make_store):
    other = make_store(16 << 20)
    config = ReplicateConfig()
    config.preferred_segment = other.get_hostname()
    key = "psess-placed"
    page = pages_for([key], seed=40)[key]
    assert store.batch_put_session_start([key], [PAGE_BYTES], config) == [0]
    assert store.batch_put_session_revoke([key]) == [0]
    assert store.batch_put_session_start([key], [PAGE_BYTES], config) == [0]
    for layer in range(LAYERS):
        assert store.batch_put_from_multi_buffer_ranges(
            *layer_writes([key], layer, {key: page})) == [LAYER_BYTES]
    assert store.batch_put_session_end([key]) == [0]
    assert other.get(key) == page.tobytes()


def test_writes_from_threads_then_one_end(store):
    key = "psess-threads"
    page = pages_for([key], seed=50)[key]
    assert store.batch_put_session_start([key], [PAGE_BYTES]) == [0]
    results = []

    def write(layer):
        results.append(store.batch_put_from_multi_buffer_ranges(
            *layer_writes([key], layer, {key: page}))[0])

    threads = [threading.Thread(target=write, args=(layer,)) for layer in range(LAYERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [LAYER_BYTES] * LAYERS
    assert store.batch_put_session_end([key]) == [0]
    assert store.get(key) == page.tobytes()


def test_before_setup_every_key_fails():
    from yuebing.store import MooncakeDistributedStore

    s = MooncakeDistributedStore()
    assert s.batch_put_session_start(["k"], [1]) == [INVALID_PARAMS]
    assert s.batch_put_from_multi_buffer_ranges(["k"], [[0]], [[1]], [[0]]) == [INVALID_PARAMS]
    assert s.batch_put_session_end(["k"]) == [INVALID_PARAMS]
    assert s.batch_put_session_revoke(["k"]) == [INVALID_PARAMS]
