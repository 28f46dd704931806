"""Replica copy and move tasks (create_copy_task / create_move_task / query_task) against a real
cluster: new replicas where asked, byte for byte from each of them, moves that leave their
source, errors at creation as upstream's codes, and task states."""

import threading
import time

from conftest import new_store
from yuebing.store import QueryTaskResponse, ReplicateConfig, TaskStatus, TaskType

INVALID_PARAMS = -600
OBJECT_NOT_FOUND = -704
TASK_NOT_FOUND = -1400
SEGMENT = 32 << 20


def wait(store, task_id, timeout=20.0):
    deadline = time.monotonic() + timeout
    while True:
        response, err = store.query_task(task_id)
        assert err == 0
        if response.status in (TaskStatus.SUCCESS, TaskStatus.FAILED):
            return response
        assert time.monotonic() < deadline, f"task still {response.status}"
        time.sleep(0.02)


def on(segment):
    rc = ReplicateConfig()
    rc.preferred_segment = segment
    return rc


def endpoints(store, key):
    return sorted(d.get_memory_descriptor().buffer_descriptor.transport_endpoint
                  for d in store.get_replica_desc(key))


def holders(make_store, count):
    stores = [make_store(SEGMENT) for _ in range(count)]
    return stores, [s.get_hostname() for s in stores]


def test_a_copy_adds_readable_replicas_on_its_targets(make_store):
    (a, b, c), names = holders(make_store, 3)
    value = bytes(range(256)) * 4096  # 1 MiB
    assert a.put("cm-copy", value, on(names[0])) == 0
    assert endpoints(a, "cm-copy") == [names[0]]
    task_id, err = a.create_copy_task("cm-copy", [names[1], names[2]])
    assert err == 0 and task_id != (0, 0)
    done = wait(a, task_id)
    assert done.status == TaskStatus.SUCCESS, done.message
    assert done.type == TaskType.REPLICA_COPY
    assert done.id == task_id
    assert done.created_at_ms_epoch <= done.last_updated_at_ms_epoch
    assert isinstance(done, QueryTaskResponse) and "QueryTaskResponse(id=" in repr(done)
    assert endpoints(a, "cm-copy") == sorted(names)
    # Each copy holds the bytes: clear the others and read what is left.
    for keep in range(3):
        fresh = f"cm-copy-{keep}"
        assert a.put(fresh, value, on(names[0])) == 0
        task_id, err = a.create_copy_task(fresh, [names[1], names[2]])
        assert err == 0 and wait(a, task_id).status == TaskStatus.SUCCESS
        for other in range(3):
            if other != keep:
                assert a.batch_replica_clear([fresh], segment_name=names[other]) == [fresh]
        assert endpoints(b, fresh) == [names[keep]]
        assert c.get(fresh) == value


def test_a_move_leaves_its_source(make_store):
    (a, b), names = holders(make_store, 2)
    value = b"moved" * 1000
    assert a.put("cm-move", value, on(names[0])) == 0
    task_id, err = b.create_move_task("cm-move", names[0], names[1])
    assert err == 0
    done = wait(b, task_id)
    assert done.status == TaskStatus.SUCCESS and done.type == TaskType.REPLICA_MOVE
    assert endpoints(a, "cm-move") == [names[1]]
    assert a.get("cm-move") == value


def test_copying_to_a_segment_that_holds_a_replica_succeeds_without_change(make_store):
    (a,), names = holders(make_store, 1)
    assert a.put("cm-same", b"x" * 100, on(names[0])) == 0
    task_id, err = a.create_copy_task("cm-same", [names[0]])
    assert err == 0 and wait(a, task_id).status == TaskStatus.SUCCESS
    assert endpoints(a, "cm-same") == [names[0]]


def test_bad_requests_fail_at_creation_with_upstreams_codes(make_store):
    (a, b), names = holders(make_store, 2)
    assert a.put("cm-bad", b"y" * 100, on(names[0])) == 0
    assert a.create_copy_task("cm-missing", [names[1]]) == ((0, 0), OBJECT_NOT_FOUND)
    assert a.create_move_task("cm-missing", names[0], names[1]) == ((0, 0), OBJECT_NOT_FOUND)
    assert a.create_copy_task("cm-bad", ["unknown:1", "unknown:2"]) == ((0, 0), INVALID_PARAMS)
    assert a.create_copy_task("cm-bad", []) == ((0, 0), INVALID_PARAMS)
    assert a.create_move_task("cm-bad", "unknown:1", names[1]) == ((0, 0), INVALID_PARAMS)
    assert a.create_move_task("cm-bad", names[0], "unknown:1") == ((0, 0), INVALID_PARAMS)
    assert a.create_move_task("cm-bad", names[0], names[0]) == ((0, 0), INVALID_PARAMS)
    assert a.create_move_task("cm-bad", names[1], names[0]) == ((0, 0), INVALID_PARAMS)
    assert endpoints(a, "cm-bad") == [names[0]]  # nothing changed
    assert a.query_task((12345, 678)) == (None, TASK_NOT_FOUND)
    # Tasks belong to the client that made them.
    task_id, err = a.create_copy_task("cm-bad", [names[1]])
    assert err == 0
    assert b.query_task(task_id) == (None, TASK_NOT_FOUND)
    assert wait(a, task_id).status == TaskStatus.SUCCESS


def test_a_removed_object_fails_its_task_and_leaves_nothing(make_store):
    (a, b), names = holders(make_store, 2)
    assert a.put("cm-gone", b"z" * 4096, on(names[0])) == 0
    task_id, err = a.create_copy_task("cm-gone", [names[1]])
    assert err == 0
    assert a.remove("cm-gone", force=True) == 0
    done = wait(a, task_id)
    # Removed before or after its bytes were written: never a replica left behind.
    assert done.status in (TaskStatus.SUCCESS, TaskStatus.FAILED)
    assert a.get_replica_desc("cm-gone") == []
    assert b.is_exist("cm-gone") == 0


def test_concurrent_moves_each_land_where_asked(make_store):
    (a, b, c), names = holders(make_store, 3)
    keys = [f"cm-many-{i}" for i in range(30)]
    for i, key in enumerate(keys):
        assert a.put(key, key.encode() * 50, on(names[i % 3])) == 0
    destinations = {key: names[(i + 1) % 3] for i, key in enumerate(keys)}
    tasks = {}

    def move(part):
        for i, key in part:
            task_id, err = c.create_move_task(key, names[i % 3], destinations[key])
            assert err == 0
            tasks[key] = task_id

    threads = [threading.Thread(target=move, args=(list(enumerate(keys))[k::4],))
               for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for key in keys:
        assert wait(c, tasks[key]).status == TaskStatus.SUCCESS
        assert endpoints(b, key) == [destinations[key]]
        assert b.get(key) == key.encode() * 50


def test_tasks_before_setup():
    from yuebing.store import MooncakeDistributedStore

    s = MooncakeDistributedStore()
    assert s.create_copy_task("k", ["x:1"]) == ((0, 0), INVALID_PARAMS)
    assert s.create_move_task("k", "x:1", "y:1") == ((0, 0), INVALID_PARAMS)
    assert s.query_task((1, 2)) == (None, INVALID_PARAMS)
    assert int(TaskStatus.FAILED) == 2 and int(TaskStatus.SUCCESS) == 3


def test_a_store_closed_with_tasks_pending_gives_their_space_back(cluster):
    a = new_store(cluster.master_address, SEGMENT)
    b = new_store(cluster.master_address, SEGMENT)
    try:
        names = [a.get_hostname(), b.get_hostname()]
        value = b"p" * (256 << 10)
        keys = [f"cm-close-{i}" for i in range(20)]
        for key in keys:
            assert a.put(key, value, on(names[0])) == 0
        for key in keys:
            assert a.create_copy_task(key, [names[1]])[1] == 0
        a.close()  # some tasks may still be pending: revoked, never half-written
        for key in keys:
            assert b.get(key) in (value, b"")  # a's segment went; b's copies are whole or absent
    finally:
        b.close()
