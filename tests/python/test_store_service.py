"""The store service with Mooncake's REST API (`python -m mooncake.mooncake_store_service`, as
upstream's docs start it) as a real process in a real cluster, driven over HTTP: its store is a
member of the cluster (what it puts, other clients read byte for byte, and the reverse), errors
are JSON with upstream's status codes, and SIGTERM stops it cleanly."""
import json
import os
import signal
import sys
import urllib.error
import urllib.request

import pytest

from conftest import Cluster, Process, cluster_missing_reason, free_port, new_store

pytest.importorskip("aiohttp")


def service_argv(port: int, *extra: str):
    return [sys.executable, "-m", "mooncake.mooncake_store_service", f"--port={port}", *extra]


def service_env(master_address: str):
    env = dict(os.environ)
    env.update({"MOONCAKE_MASTER": master_address, "MOONCAKE_LOCAL_HOSTNAME": "127.0.0.1",
                "MOONCAKE_TE_META_DATA_SERVER": "P2PHANDSHAKE", "MOONCAKE_PROTOCOL": "tcp",
                "MOONCAKE_LOCAL_BUFFER_SIZE": "16MB"})
    env.pop("MOONCAKE_CONFIG_PATH", None)
    return env


class Service(Process):
    def __init__(self, master_address: str, port: int, *extra: str):
        self.port = port
        super().__init__(service_argv(port, *extra), "store service", service_env(master_address))

    def call(self, method: str, path: str, body=None, raw: bytes = None):
        """(HTTP status, content type, body bytes) of one request."""
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data,
                                         method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                return reply.status, reply.headers.get_content_type(), reply.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get_content_type(), e.read()

    def call_json(self, method: str, path: str, body=None, raw: bytes = None):
        status, kind, data = self.call(method, path, body, raw)
        assert kind == "application/json", (status, kind, data)
        return status, json.loads(data)


@pytest.fixture(scope="module")
def served():
    """(cluster, service): a master, one store, and the service with a 64 MB segment."""
    reason = cluster_missing_reason()
    if reason:
        pytest.skip(reason)
    cluster = Cluster(stores=1).start()
    service = Service(cluster.master_address, free_port(), "-Dglobal_segment_size=64MB")
    try:
        service.wait_for("REST API on")
        yield cluster, service
    finally:
        service.stop()
        cluster.stop()


def test_put_and_get_through_the_api_and_a_client(served):
    cluster, service = served
    client = new_store(cluster.master_address)
    try:
        assert service.call_json("PUT", "/api/put", {"key": "svc-a", "value": "héllo"}) == (
            200, {"status": "success"})
        status, kind, data = service.call("GET", "/api/get/svc-a")
        assert (status, kind, data) == (200, "application/octet-stream", "héllo".encode())
        assert client.get("svc-a") == "héllo".encode()

        payload = bytes(range(256)) * 4096  # 1 MiB put by a client, read through the API
        assert client.put("svc-b", payload) == 0
        status, _, data = service.call("GET", "/api/get/svc-b")
        assert status == 200 and data == payload
        assert service.call_json("GET", "/api/exist/svc-b") == (200, {"exists": True})
    finally:
        client.close()


def test_missing_keys_and_removal(served):
    _, service = served
    assert service.call_json("GET", "/api/get/svc-none") == (404, {"error": "Key not found"})
    assert service.call_json("GET", "/api/exist/svc-none") == (200, {"exists": False})
    assert service.call_json("PUT", "/api/put", {"key": "svc-r", "value": "x"})[0] == 200
    assert service.call_json("DELETE", "/api/remove/svc-r") == (200, {"status": "success"})
    assert service.call_json("GET", "/api/exist/svc-r") == (200, {"exists": False})
    status, body = service.call_json("DELETE", "/api/remove/svc-r")
    assert status == 500 and body["error"] == "Remove operation failed"


def test_bad_requests_get_400_and_change_nothing(served):
    _, service = served
    for raw in (b"{not json", b"[1, 2]"):
        status, body = service.call_json("PUT", "/api/put", raw=raw)
        assert status == 400 and body["error"], body
    for body in ({"value": "v"}, {"key": "", "value": "v"}, {"key": "svc-bad"}):
        assert service.call_json("PUT", "/api/put", body) == (400, {"error":
                                                                    "Missing key or value"})
    status, body = service.call_json("PUT", "/api/put", {"key": "svc-bad", "value": 5})
    assert status == 400 and "string" in body["error"]
    assert service.call_json("GET", "/api/exist/svc-bad") == (200, {"exists": False})
    for size in (0, -1, 1.5, "1024", None):
        status, body = service.call_json("POST", "/api/mount", {"size": size})
        assert status == 400 and "Invalid size" in body["error"], (size, body)
    assert service.call_json("POST", "/api/unmount_shm", {"segment_ids": []})[0] == 400
    assert service.call_json("POST", "/api/mount_shm", {"name": "../x", "size": 4096})[0] == 400
    status, body = service.call_json("POST", "/api/unmount_local_disk",
                                     {"grace_period_seconds": 3601})
    assert status == 400 and "3600" in body["error"]
    assert service.call_json("POST", "/api/reconfigure", {"mode": "sideways"})[0] == 400


def test_segment_endpoints_say_what_yuebing_lacks(served):
    # yuebing's store has no run-time segment mounts yet: a clear 500 that names the call.
    _, service = served
    status, body = service.call_json("POST", "/api/mount", {"size": 1 << 20})
    assert status == 500 and "allocate_and_mount_segment" in body["error"], body
    status, body = service.call_json("POST", "/api/reconfigure",
                                     {"mode": "decode", "path": "/dev/shm/x", "size": 4096})
    assert status == 500 and "mount_segment" in body["error"], body
    # Nothing mounted, so prefill has nothing to undo.
    assert service.call_json("POST", "/api/reconfigure", {"mode": "prefill"}) == (
        200, {"status": "success", "mode": "prefill"})


def test_remove_all_counts_and_empties(served):
    _, service = served
    for i in range(5):
        assert service.call_json("PUT", "/api/put", {"key": f"svc-all-{i}", "value": "v"})[0] == 200
    status, body = service.call_json("DELETE", "/api/remove_all")
    removed = int(body["status"].split()[2])
    assert status == 200 and body["status"] == f"success removed {removed} keys"
    assert removed >= 5
    for i in range(5):
        assert service.call_json("GET", f"/api/exist/svc-all-{i}") == (200, {"exists": False})


def test_sigterm_stops_the_service_and_unmounts_its_segment():
    reason = cluster_missing_reason()
    if reason:
        pytest.skip(reason)
    cluster = Cluster(stores=0).start()
    try:
        service = Service(cluster.master_address, free_port(), "-Dglobal_segment_size=32MB")
        service.wait_for("REST API on")
        assert service.call_json("PUT", "/api/put", {"key": "svc-term", "value": "v"})[0] == 200
        service.proc.send_signal(signal.SIGTERM)
        assert service.proc.wait(15) == 0, "\n".join(service.lines[-20:])
        # Its segment (the only one) is gone, and with it the object.
        client = new_store(cluster.master_address)
        try:
            assert client.is_exist("svc-term") == 0
            assert client.put("svc-after", b"v") != 0, "no segment should be left to hold it"
        finally:
            client.close()
    finally:
        cluster.stop()


def test_a_master_that_never_comes_up_ends_the_start_up():
    service = Service(f"127.0.0.1:{free_port()}", free_port(), "--max-wait-time=2",
                      "-Dglobal_segment_size=16MB")
    try:
        assert service.proc.wait(30) != 0
        assert any("did not start" in line for line in service.lines), service.lines[-10:]
    finally:
        service.stop()
