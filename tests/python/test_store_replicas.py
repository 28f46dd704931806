"""Replica descriptors (get_replica_desc / batch_get_replica_desc) and batch_replica_clear against
a real cluster: where each replica of an object lives, and clearing all of an object's replicas
or only those on one segment, never under a reader."""

import time

import pytest

from conftest import new_store
from yuebing.store import (
    Descriptor,
    MooncakeDistributedStore,
    ObjectDataType,
    ReplicaStatus,
    ReplicateConfig,
)

SEGMENT = 32 << 20


def two_replicas():
    rc = ReplicateConfig()
    rc.replica_num = 2
    return rc


def endpoints(store, key):
    return sorted(d.get_memory_descriptor().buffer_descriptor.transport_endpoint
                  for d in store.get_replica_desc(key))


def test_replica_descriptors_say_where_the_bytes_are(store):
    value = b"where-am-i" * 100
    assert store.put("rdesc-one", value) == 0
    (desc,) = store.get_replica_desc("rdesc-one")
    assert desc.status == ReplicaStatus.COMPLETE
    assert desc.is_memory_replica() and not desc.is_disk_replica()
    assert not desc.is_local_disk_replica()
    buf = desc.get_memory_descriptor().buffer_descriptor
    assert isinstance(buf, Descriptor)
    assert buf.size == len(value)
    assert buf.buffer_address != 0
    assert ":" in buf.transport_endpoint
    assert repr(buf).startswith(f"<Descriptor size={len(value)} buffer_address=")
    with pytest.raises(RuntimeError, match="Expected DiskDescriptor"):
        desc.get_disk_descriptor()


def test_a_lookup_of_replicas_leaves_no_read_lease(store):
    assert store.put("rdesc-lease", b"x" * 64) == 0
    assert len(store.get_replica_desc("rdesc-lease")) == 1
    assert len(store.batch_get_replica_desc(["rdesc-lease"])["rdesc-lease"]) == 1
    assert store.remove("rdesc-lease") == 0  # not -706: the lookups' leases were given back


def test_batch_descriptors_leave_out_missing_keys(store):
    assert store.put("rdesc-a", b"a" * 10) == 0
    assert store.put("rdesc-b", b"b" * 20) == 0
    found = store.batch_get_replica_desc(["rdesc-a", "rdesc-missing", "rdesc-b"])
    assert sorted(found) == ["rdesc-a", "rdesc-b"]
    assert found["rdesc-b"][0].get_memory_descriptor().buffer_descriptor.size == 20
    assert store.get_replica_desc("rdesc-missing") == []
    assert store.get_replica_desc("") == []  # a bad key is a miss, as upstream
    assert store.batch_get_replica_desc([]) == {}


def test_clear_drops_whole_objects_and_reports_only_those_cleared(store):
    keys = [f"rclear-{i}" for i in range(5)]
    for k in keys:
        assert store.put(k, k.encode() * 10) == 0
    cleared = store.batch_replica_clear(keys[:3] + ["rclear-missing", ""])
    assert cleared == keys[:3]
    assert store.batch_is_exist(keys) == [0, 0, 0, 1, 1]
    assert store.get(keys[4]) == keys[4].encode() * 10
    assert store.batch_replica_clear([]) == []
    # The space is free at once: the same keys can be written again.
    for k in keys[:3]:
        assert store.put(k, b"again") == 0
        assert store.get(k) == b"again"


def test_clear_skips_an_object_while_it_is_being_read(store):
    assert store.put("rclear-read", b"r" * 4096) == 0
    assert store.batch_get_session_start(["rclear-read"]) == [0]  # holds a read lease
    try:
        assert store.batch_replica_clear(["rclear-read"]) == []
        assert store.get("rclear-read") == b"r" * 4096
    finally:
        assert store.batch_get_session_end(["rclear-read"]) == 0
    assert store.batch_replica_clear(["rclear-read"]) == ["rclear-read"]
    assert store.get("rclear-read") == b""


def test_clear_on_one_segment_keeps_the_other_replica(make_store):
    writer = make_store(SEGMENT)
    other = make_store(SEGMENT)
    assert writer.remove_all(True) >= 0
    value = bytes(range(256)) * 64
    assert writer.put("rclear-seg", value, two_replicas()) == 0
    placed = endpoints(writer, "rclear-seg")
    assert len(placed) == 2 and placed[0] != placed[1]

    assert writer.batch_replica_clear(["rclear-seg"], segment_name="nowhere:1") == []
    assert endpoints(writer, "rclear-seg") == placed

    assert writer.batch_replica_clear(["rclear-seg"], segment_name=placed[0]) == ["rclear-seg"]
    assert endpoints(other, "rclear-seg") == [placed[1]]
    assert other.get("rclear-seg") == value  # read from the replica left
    # Clearing the last replica removes the object. (From the reader's own client: its read
    # lease is released with its next call, while another client's call might come first.)
    assert other.batch_replica_clear(["rclear-seg"], segment_name=placed[1]) == ["rclear-seg"]
    assert other.get("rclear-seg") == b""
    assert other.get_replica_desc("rclear-seg") == []


def test_calls_before_setup_give_empty_results():
    from yuebing.store import MooncakeDistributedStore

    s = MooncakeDistributedStore()
    assert s.get_replica_desc("k") == []
    assert s.batch_get_replica_desc(["k"]) == {}
    assert s.batch_replica_clear(["k"]) == []


def test_replicate_config_takes_upstreams_fields(store):
    rc = ReplicateConfig()
    assert rc.data_type == ObjectDataType.UNKNOWN
    assert rc.group_ids is None
    assert (rc.nof_replica_num, rc.dfs_replica_num, rc.preferred_nof_segments) == (0, 0, [])
    rc.data_type = ObjectDataType.KVCACHE
    rc.group_ids = ["g1", "g2"]
    assert rc.group_ids == ["g1", "g2"]
    assert int(ObjectDataType.GENERAL) == 9
    assert store.put("rconf-tagged", b"kv", rc) == 0
    assert store.get("rconf-tagged") == b"kv"
    # No NVMe-oF or shared-file tier: a request for one is refused and writes nothing.
    rc.nof_replica_num = 1
    assert store.put("rconf-nof", b"kv", rc) == -600
    assert store.is_exist("rconf-nof") == 0


def test_objects_spilled_to_a_disk_tier_are_described_and_counted(private_cluster, tmp_path):
    cluster = private_cluster(stores=1, store_size="8MB",
                              store_flags=[f"--ssd_path={tmp_path}", "--ssd_capacity=256MB"])
    store = new_store(cluster.master_address)
    try:
        value = bytes(range(256)) * 1024  # 256 KiB; 48 of them are 1.5x the store's memory
        keys = [f"rdisk-{i}" for i in range(48)]
        for key in keys:
            deadline = time.monotonic() + 60
            while (rc := store.put(key, value)) == -200 and time.monotonic() < deadline:
                time.sleep(0.02)  # memory frees up as spills complete
            assert rc == 0, key
        assert store.get_offload_rpc_read_count() == 0
        on_disk = [k for k, descs in store.batch_get_replica_desc(keys).items()
                   if [d.is_local_disk_replica() for d in descs] == [True]]
        assert on_disk, "nothing was spilled"
        (desc,) = store.get_replica_desc(on_disk[0])
        assert not desc.is_memory_replica() and not desc.is_disk_replica()
        with pytest.raises(RuntimeError, match="Expected MemoryDescriptor"):
            desc.get_memory_descriptor()
        assert store.get(on_disk[0]) == value
        assert store.get_offload_rpc_read_count() >= 1
    finally:
        store.close()


def test_setup_with_enable_ssd_offload_gives_the_client_a_disk_tier(private_cluster, tmp_path):
    # Upstream's client-side offload (setup(..., enable_ssd_offload=True, ssd_offload_path=P)):
    # the client's own segment spills what the master evicts to files under P, and reads them back.
    cluster = private_cluster(stores=0)
    owner = MooncakeDistributedStore()
    assert owner.setup("127.0.0.1", "P2PHANDSHAKE", 8 << 20, 16 << 20, "tcp", "",
                       cluster.master_address, enable_ssd_offload=True,
                       ssd_offload_path=str(tmp_path)) == 0
    reader = new_store(cluster.master_address)
    try:
        value = bytes(range(256)) * 1024  # 256 KiB; 48 of them are 1.5x the segment
        keys = [f"offload-{i}" for i in range(48)]
        for key in keys:
            deadline = time.monotonic() + 60
            while (rc := owner.put(key, value)) == -200 and time.monotonic() < deadline:
                time.sleep(0.02)  # memory frees up as spills complete
            assert rc == 0, key
        on_disk = [k for k, descs in reader.batch_get_replica_desc(keys).items()
                   if [d.is_local_disk_replica() for d in descs] == [True]]
        assert on_disk, "nothing was spilled"
        assert any(tmp_path.iterdir()), "no offload file written"
        for key in keys:
            assert reader.get(key) == value, key
        assert reader.get_offload_rpc_read_count() >= len(on_disk)
    finally:
        reader.close()
        owner.close()


def test_enable_ssd_offload_without_a_path_is_refused(cluster, monkeypatch):
    monkeypatch.delenv("MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", raising=False)
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 8 << 20, 16 << 20, "tcp", "",
                   cluster.master_address, enable_ssd_offload=True) == -600
    # A client that lends no memory has nothing to spill: the option is ignored.
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "",
                   cluster.master_address, enable_ssd_offload=True) == 0
    s.close()
