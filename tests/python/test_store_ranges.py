"""get_into_ranges (Mooncake's buffer-major ranged read) against a real cluster: bytes land where
asked and nowhere else, results have the request's shape, and each kind of bad input fails only
what it covers."""

import numpy as np
import pytest

INVALID_PARAMS = -600
OBJECT_NOT_FOUND = -704
FILL = 0xEE


def pattern(seed: int, n: int) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


@pytest.fixture
def objects(store):
    values = {"rng-x": pattern(1, 70000), "rng-y": pattern(2, 900)}
    for key, value in values.items():
        assert store.put(key, value) == 0
    return values


@pytest.fixture
def buffers(store):
    """Three registered 2 KiB buffers filled with FILL."""
    bufs = [np.full(2048, FILL, dtype=np.uint8) for _ in range(3)]
    for b in bufs:
        assert store.register_buffer(b.ctypes.data, b.nbytes) == 0
    yield bufs
    for b in bufs:
        store.unregister_buffer(b.ctypes.data)


def untouched_except(buf: np.ndarray, spans) -> bool:
    mask = np.ones(buf.nbytes, dtype=bool)
    for start, length in spans:
        mask[start:start + length] = False
    return bool(np.all(buf[mask] == FILL))


def test_fragments_of_several_keys_land_in_several_buffers(store, objects, buffers):
    x, y = objects["rng-x"], objects["rng-y"]
    b0, b1, _ = buffers
    result = store.get_into_ranges(
        [b0.ctypes.data, b1.ctypes.data],
        [["rng-x", "rng-y"], ["rng-y", "rng-x", "rng-x"]],
        [[[0, 100, 1000], [50]], [[0], [810, 820], [2000]]],
        [[[69990, 0, 512], [899]], [[100], [5, 6], [1]]],
        [[[10, 7, 300], [1]], [[800], [3, 3], [0]]])
    assert result == [[[10, 7, 300], [1]], [[800], [3, 3], [0]]]
    assert bytes(b0[0:10]) == x[69990:70000]
    assert bytes(b0[100:107]) == x[0:7]
    assert bytes(b0[1000:1300]) == x[512:812]
    assert bytes(b0[50:51]) == y[899:900]
    assert bytes(b1[0:800]) == y[100:900]
    assert bytes(b1[810:813]) == x[5:8]
    assert bytes(b1[820:823]) == x[6:9]
    assert untouched_except(b0, [(0, 10), (100, 7), (1000, 300), (50, 1)])
    assert untouched_except(b1, [(0, 800), (810, 3), (820, 3)])


def test_a_whole_object_in_ordered_fragments_and_a_pointer_inside_a_region(store, objects, buffers):
    y = objects["rng-y"]
    b2 = buffers[2]
    # A pointer 1000 bytes into a registered region: its capacity is the rest of the region.
    result = store.get_into_ranges([b2.ctypes.data + 1000], [["rng-y"]], [[[0, 400]]],
                                   [[[0, 400]]], [[[400, 500]]])
    assert result == [[[400, 500]]]
    assert bytes(b2[1000:1900]) == y
    over = store.get_into_ranges([b2.ctypes.data + 1000], [["rng-y"]], [[[1000]]], [[[0]]],
                                 [[[100]]])
    assert over == [[[INVALID_PARAMS]]]  # 1000 + 100 passes the region's end (2048 - 1000)


def test_each_bad_fragment_fails_alone(store, objects, buffers):
    x = objects["rng-x"]
    b0 = buffers[0]
    result = store.get_into_ranges(
        [b0.ctypes.data], [["rng-x", "no-such-key", "rng-x"]],
        [[[0, 8, 2040], [16], [24]]],
        [[[len(x) - 2, 0, 0], [0], [3]]],
        [[[4, 4, 16], [4], [4]]])
    # past the object's end; past the buffer's end; a missing key; the rest are read
    assert result[0][0] == [INVALID_PARAMS, 4, INVALID_PARAMS]
    assert result[0][1] == [OBJECT_NOT_FOUND]
    assert result[0][2] == [4]
    assert bytes(b0[8:12]) == x[0:4]
    assert bytes(b0[24:28]) == x[3:7]
    assert untouched_except(b0, [(8, 4), (24, 4)])


def test_shapes_that_do_not_match_fail_what_they_cover(store, objects, buffers):
    b0, b1, _ = buffers
    # The outer lists differ in length: everything fails, shaped by buffers, keys and dsts.
    assert store.get_into_ranges([b0.ctypes.data, b1.ctypes.data], [["rng-x"]], [[[0, 1]]],
                                 [[[0, 1]]], [[[1, 1]]]) == [[[INVALID_PARAMS] * 2],
                                                             [[INVALID_PARAMS]]]
    # One key's lists differ: that row fails; a row with no fragments reads nothing.
    assert store.get_into_ranges([b0.ctypes.data], [["rng-x", "rng-y"]], [[[0], []]],
                                 [[[0, 1], []]], [[[], []]]) == [[[INVALID_PARAMS], []]]
    # One buffer's lists differ: that buffer fails, the other reads.
    assert store.get_into_ranges([b0.ctypes.data, b1.ctypes.data], [["rng-x"], ["rng-y"]],
                                 [[[0]], [[0]]], [[[0]], [[0]]],
                                 [[[1]], [[2], [3]]]) == [[[1]], [[INVALID_PARAMS]]]
    assert store.get_into_ranges([], [], [], [], []) == []


def test_destinations_must_be_registered(store, objects, buffers):
    loose = np.full(256, FILL, dtype=np.uint8)
    b0 = buffers[0]
    assert store.get_into_ranges([loose.ctypes.data, 0, b0.ctypes.data],
                                 [["rng-y"], ["rng-y"], ["rng-y"]],
                                 [[[0]], [[0]], [[0]]], [[[0]], [[0]], [[0]]],
                                 [[[8]], [[8]], [[8]]]) == [[[INVALID_PARAMS]],
                                                            [[INVALID_PARAMS]], [[8]]]
    assert np.all(loose == FILL)
    assert store.unregister_buffer(b0.ctypes.data) == 0
    assert store.get_into_ranges([b0.ctypes.data], [["rng-y"]], [[[0]]], [[[0]]],
                                 [[[8]]]) == [[[INVALID_PARAMS]]]
    assert store.register_buffer(b0.ctypes.data, b0.nbytes) == 0


def test_argument_names_are_upstreams(store, objects, buffers):
    b0 = buffers[0]
    assert store.get_into_ranges(buffer_ptrs=[b0.ctypes.data], all_keys=[["rng-y"]],
                                 all_dst_offsets=[[[0]]], all_src_offsets=[[[0]]],
                                 all_sizes=[[[5]]]) == [[[5]]]
    with pytest.raises(TypeError):
        store.get_into_ranges([b0.ctypes.data], ["rng-y"], [[0]], [[0]], [[5]])
