"""Promotion on hit: a store's disk-only object read often comes back to memory.

Real processes: a yuebing-master with upstream's --promotion_on_hit flags and a yuebing-store
with a disk tier (--ssd_path) smaller in memory than what is put, read through the Python API.
"""
import time
import urllib.request

from conftest import new_store

VALUE_BYTES = 256 << 10  # 48 of them are 1.5x the store's 8 MB of memory
KEYS = [f"promo-{i}" for i in range(48)]


def value_of(key: str) -> bytes:
    seed = KEYS.index(key)
    return bytes((seed + i) % 251 for i in range(256)) * (VALUE_BYTES // 256)


def fill(store) -> list:
    """Puts every key (waiting out spills when memory is full); returns the disk-only ones."""
    for key in KEYS:
        deadline = time.monotonic() + 60
        while (rc := store.put(key, value_of(key))) == -200 and time.monotonic() < deadline:
            time.sleep(0.02)  # memory frees up as spills complete
        assert rc == 0, key
    on_disk = [key for key in KEYS if on_disk_only(store, key)]
    assert on_disk, "nothing was spilled"
    return on_disk


def on_disk_only(store, key: str) -> bool:
    return [d.is_local_disk_replica() for d in store.get_replica_desc(key)] == [True]


def in_memory(store, key: str) -> bool:
    descs = store.get_replica_desc(key)
    return bool(descs) and all(d.is_memory_replica() for d in descs)


def promoted_total(cluster) -> int:
    url = f"http://127.0.0.1:{cluster.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as reply:
        for line in reply.read().decode().splitlines():
            fields = line.split()
            if len(fields) == 2 and fields[0] == "yuebing_master_promoted_objects_total":
                return int(float(fields[1]))
    raise AssertionError("no promoted_objects_total in /metrics")


def make_room(store, on_disk: list) -> None:
    """Removes the objects still in memory, so that a promotion finds space."""
    for key in KEYS:
        if key not in on_disk:
            assert store.remove(key) == 0, key
    time.sleep(0.5)  # spills under way end (removed ones are dropped) before files are counted


def test_a_disk_object_read_twice_comes_back_to_memory(private_cluster, tmp_path):
    cluster = private_cluster(stores=1, store_size="8MB",
                              master_flags=["--promotion_on_hit=true",
                                            "--promotion_admission_threshold=2"],
                              store_flags=[f"--ssd_path={tmp_path}", "--ssd_capacity=256MB"])
    store = new_store(cluster.master_address)
    try:
        on_disk = fill(store)
        make_room(store, on_disk)
        hot, cold = on_disk[0], on_disk[-1]
        files_before = sum(1 for p in tmp_path.iterdir() if p.suffix == ".obj")
        assert store.get(hot) == value_of(hot)  # first read: under the threshold
        assert store.get(cold) == value_of(cold)
        time.sleep(0.5)  # several disk-tier syncs: nothing handed out yet
        assert on_disk_only(store, hot)
        assert store.get(hot) == value_of(hot)  # second read: the promotion is queued
        deadline = time.monotonic() + 15
        while not in_memory(store, hot) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert in_memory(store, hot), store.get_replica_desc(hot)
        # Exact bytes from memory now; the store deleted its file; the cold object stays.
        assert store.get(hot) == value_of(hot)
        assert sum(1 for p in tmp_path.iterdir() if p.suffix == ".obj") == files_before - 1
        assert on_disk_only(store, cold)
        assert store.get(cold) == value_of(cold)
        assert promoted_total(cluster) == 1
        # A promoted object is an ordinary object: removable, and replaced by an upsert.
        assert store.upsert(hot, b"new") == 0
        assert store.get(hot) == b"new"
        assert store.remove(hot) == 0
        assert store.is_exist(hot) == 0
    finally:
        store.close()


def test_without_the_flag_disk_objects_stay_on_disk(private_cluster, tmp_path):
    cluster = private_cluster(stores=1, store_size="8MB",
                              store_flags=[f"--ssd_path={tmp_path}", "--ssd_capacity=256MB"])
    store = new_store(cluster.master_address)
    try:
        on_disk = fill(store)
        make_room(store, on_disk)
        key = on_disk[0]
        for _ in range(4):
            assert store.get(key) == value_of(key)
        time.sleep(0.5)
        assert on_disk_only(store, key)
        assert promoted_total(cluster) == 0
    finally:
        store.close()


def test_a_removed_object_being_promoted_stays_removed(private_cluster, tmp_path):
    # Threshold 1: every read of a disk object hands a promotion to its store; removing the
    # objects right after reading them races the promotions. Whatever the timing, no removed
    # key comes back and no read returns other bytes.
    cluster = private_cluster(stores=1, store_size="8MB",
                              master_flags=["--promotion_on_hit=true",
                                            "--promotion_admission_threshold=1",
                                            "--promotion_max_per_heartbeat=4"],
                              store_flags=[f"--ssd_path={tmp_path}", "--ssd_capacity=256MB"])
    store = new_store(cluster.master_address)
    try:
        on_disk = fill(store)
        make_room(store, on_disk)
        removed = on_disk[::2]
        kept = on_disk[1::2]
        for key in on_disk:
            assert store.get(key) == value_of(key)
        for key in removed:
            assert store.remove(key) == 0
        time.sleep(1.0)  # the promotions end (or fail) meanwhile
        for key in removed:
            assert store.is_exist(key) == 0, key
            assert store.get(key) == b""
        for key in kept:
            assert store.get(key) == value_of(key), key
    finally:
        store.close()
