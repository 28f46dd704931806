"""Drain jobs through the master's admin HTTP API (upstream's /api/v1/drain_jobs), with a real
master and real yuebing-store processes: a drain moves every object off its segments, nothing is
lost, puts that preferred a draining segment go elsewhere, and the segment ends DRAINED."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Optional

import pytest

from conftest import new_store


def http(cluster, method: str, path: str, body: Optional[dict] = None):
    """(status, JSON body) of a request to the master's admin port."""
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    req = urllib.request.Request(f"http://127.0.0.1:{cluster.metrics_port}{path}", data=data,
                                 method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def wait_job(cluster, job_id: str, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status, job = http(cluster, "GET", f"/api/v1/drain_jobs/query?job_id={job_id}")
        assert status == 200 and job["success"], job
        if job["status_name"] in ("SUCCEEDED", "FAILED", "CANCELED"):
            return job
        assert time.monotonic() < deadline, f"job still {job}"
        time.sleep(0.1)


def segment_status(cluster, segment: str) -> str:
    status, body = http(cluster, "GET", f"/api/v1/segments/status?segment={segment}")
    assert status == 200, body
    return body["status_name"]


def replica_segments(store, key: str):
    return sorted(d.get_memory_descriptor().buffer_descriptor.transport_endpoint
                  for d in store.get_replica_desc(key))


def put_on(store, key: str, value: bytes, segment: str) -> None:
    from yuebing.store import ReplicateConfig

    config = ReplicateConfig()
    config.preferred_segment = segment
    assert store.put(key, value, config) == 0


@pytest.fixture
def two_stores(private_cluster):
    cluster = private_cluster(stores=2, master_flags=["--default_kv_lease_ttl=200"])
    client = new_store(cluster.master_address)
    yield cluster, client
    client.close()


def test_drain_moves_every_object_and_the_segment_ends_drained(two_stores):
    cluster, client = two_stores
    source, target = cluster.store_segments
    values = {f"drain-{i}": bytes([i % 251]) * (4096 + i) for i in range(200)}
    for key, value in values.items():
        put_on(client, key, value, source)
    assert all(replica_segments(client, k) == [source] for k in values)
    assert segment_status(cluster, source) == "OK"

    status, created = http(cluster, "POST", "/api/v1/drain_jobs",
                           {"segments": [source], "target_segments": [target],
                            "max_concurrency": 8})
    assert status == 200 and created["success"] and created["status"] == "CREATED", created
    assert segment_status(cluster, source) in ("DRAINING", "DRAINED")
    # A put that prefers the draining segment lands elsewhere.
    put_on(client, "drain-late", b"late" * 100, source)
    assert replica_segments(client, "drain-late") == [target]

    job = wait_job(cluster, created["job_id"])
    assert job["status_name"] == "SUCCEEDED", job
    assert job["succeeded_units"] >= len(values) and job["active_units"] == 0
    assert job["migrated_bytes"] >= sum(len(v) for v in values.values())
    assert job["segments"] == [source] and job["type_name"] == "DRAIN"
    assert segment_status(cluster, source) == "DRAINED"
    for key, value in values.items():
        assert client.get(key) == value
        assert replica_segments(client, key) == [target]
    # Drained stays closed: new puts go elsewhere until the segment is unmounted.
    put_on(client, "drain-after", b"after", source)
    assert replica_segments(client, "drain-after") == [target]
    # The source store can now go without losing anything.
    cluster.stores[0].stop()
    for key, value in values.items():
        assert client.get(key) == value


def test_drain_requests_are_checked(two_stores):
    cluster, _ = two_stores
    source, target = cluster.store_segments
    assert http(cluster, "POST", "/api/v1/drain_jobs", {"segments": []})[0] == 400
    assert http(cluster, "POST", "/api/v1/drain_jobs", {"segments": [source, source]})[0] == 400
    assert http(cluster, "POST", "/api/v1/drain_jobs",
                {"segments": [source], "target_segments": [source]})[0] == 400
    assert http(cluster, "POST", "/api/v1/drain_jobs",
                {"segments": [source], "max_concurrency": 0})[0] == 400
    status, body = http(cluster, "POST", "/api/v1/drain_jobs", {"segments": ["nohost:1"]})
    assert status == 404 and body["error_code"] == -101 and not body["success"]
    req = urllib.request.Request(f"http://127.0.0.1:{cluster.metrics_port}/api/v1/drain_jobs",
                                 data=b"not json", method="POST")
    with pytest.raises(urllib.error.HTTPError) as bad:
        urllib.request.urlopen(req, timeout=10)
    assert bad.value.code == 400
    status, body = http(cluster, "GET", "/api/v1/drain_jobs/query?job_id=no-such-job")
    assert status == 404 and body["error_code"] == -1402
    assert http(cluster, "GET", "/api/v1/drain_jobs/query")[0] == 400
    assert http(cluster, "GET", "/api/v1/segments/status?segment=nohost:1")[0] == 404
    assert http(cluster, "GET", "/api/v1/segments/status")[0] == 400


def test_a_canceled_drain_opens_the_segment_again(two_stores):
    cluster, client = two_stores
    source, target = cluster.store_segments
    # An empty segment drains at once; drain the target instead while it holds an object that
    # nothing can take (the only other segment is the source, excluded by target_segments).
    put_on(client, "pinned-here", b"x" * 1000, target)
    status, created = http(cluster, "POST", "/api/v1/drain_jobs",
                           {"segments": [target], "target_segments": ["missing-segment"]})
    assert status == 404  # an unknown target is refused
    status, created = http(cluster, "POST", "/api/v1/drain_jobs", {"segments": [target]})
    assert status == 200
    # A second job on the same segment: the segment is not open any more.
    assert http(cluster, "POST", "/api/v1/drain_jobs", {"segments": [target]})[0] == 409
    job = wait_job(cluster, created["job_id"])
    assert job["status_name"] == "SUCCEEDED"
    assert replica_segments(client, "pinned-here") == [source]
    assert segment_status(cluster, target) == "DRAINED"
    # Canceling an ended job is refused.
    status, body = http(cluster, "POST", f"/api/v1/drain_jobs/cancel?job_id={created['job_id']}")
    assert status == 409 and body["error_code"] == -1010

    # A job that cannot progress (its only allowed target is closed) can be canceled.
    put_on(client, "stuck", b"y" * 1000, source)
    status, stuck = http(cluster, "POST", "/api/v1/drain_jobs", {"segments": [source]})
    assert status == 200
    time.sleep(1.5)  # the owner polls; nothing can take the object (the other segment drained)
    status, job = http(cluster, "GET", f"/api/v1/drain_jobs/query?job_id={stuck['job_id']}")
    assert job["status_name"] == "RUNNING" and job["blocked_units"] >= 1, job
    status, body = http(cluster, "POST", f"/api/v1/drain_jobs/cancel?job_id={stuck['job_id']}")
    assert status == 200 and body["status"] == "CANCELED", body
    assert segment_status(cluster, source) == "OK"
    assert client.get("stuck") == b"y" * 1000
    put_on(client, "after-cancel", b"z", source)
    assert replica_segments(client, "after-cancel") == [source]
