"""Tenants: keys apart per tenant_id, and per-tenant memory quotas on a master started with
upstream's --enable_multi_tenants flags (policy file, admin API, codes -1700..-1702).

Real processes: yuebing-master and yuebing-store on 127.0.0.1, clients through the Python API,
the admin API over HTTP.
"""
import json
import re
import urllib.error
import urllib.request

import pytest

from conftest import new_store
from yuebing.store import ReplicateConfig

TENANT_QUOTA_EXCEEDED, TENANT_NOT_REGISTERED, TENANT_NOT_EMPTY = -1700, -1701, -1702
MiB = 1 << 20


def admin(cluster, method: str, path: str, body=None):
    """(HTTP status, parsed JSON) of an admin API call."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{cluster.metrics_port}{path}",
                                     data=data, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def all_keys(cluster, tenant: str = "") -> set:
    url = f"http://127.0.0.1:{cluster.metrics_port}/get_all_keys"
    if tenant:
        url += f"?tenant_id={tenant}"
    with urllib.request.urlopen(url, timeout=10) as answer:
        return set(answer.read().decode().split())


def test_tenants_keep_their_keys_apart(cluster, make_store):
    a, b, default = (make_store(tenant_id="team-a"), make_store(tenant_id="team-b"),
                     make_store())
    assert default.remove_all(True) >= 0
    assert a.put("shared-name", b"from-a") == 0
    assert b.put("shared-name", b"from-b") == 0
    assert a.get("shared-name") == b"from-a" and b.get("shared-name") == b"from-b"
    assert default.is_exist("shared-name") == 0 and default.get("shared-name") == b""
    # Batches, sizes and removal stay in the tenant too.
    assert a.put_batch(["t-1", "t-2"], [b"a1", b"a2"]) == 0
    assert b.batch_is_exist(["t-1", "t-2", "shared-name"]) == [0, 0, 1]
    assert a.get_size("t-1") == 2 and b.get_size("t-1") < 0
    assert b.remove("t-1") != 0 and a.is_exist("t-1") == 1
    assert b.remove_by_regex("^t-.*$") == 0 and a.is_exist("t-2") == 1
    assert a.remove_by_regex("^t-.*$") == 2
    # remove_all of one tenant leaves the others' objects.
    assert b.remove_all(True) == 1
    assert a.get("shared-name") == b"from-a"
    # The master's /get_all_keys lists the default tenant's keys, as upstream.
    assert default.put("plain-key", b"d") == 0
    keys = all_keys(cluster)
    assert "plain-key" in keys and "shared-name" not in keys
    # yuebing's tenant_id parameter shows another tenant's keys and replicas.
    assert "shared-name" in all_keys(cluster, "team-a") and "plain-key" not in all_keys(
        cluster, "team-a")
    base = f"http://127.0.0.1:{cluster.metrics_port}"
    with urllib.request.urlopen(f"{base}/query_key?key=shared-name&tenant_id=team-a") as answer:
        assert json.loads(answer.read())["data"][0]["size_"] == len(b"from-a")
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"{base}/query_key?key=shared-name")
    assert missing.value.code == 404
    with urllib.request.urlopen(f"{base}/batch_query_keys?keys=shared-name&tenant_id=team-a") as a2:
        assert json.loads(a2.read())["data"]["shared-name"]["ok"] is True
    assert admin(cluster, "GET", "/batch_query_keys?keys=x&tenant_id=_bad")[0] == 400
    assert a.remove_all(True) == 1 and default.remove("plain-key") == 0


def test_a_bad_tenant_id_is_refused_at_setup(cluster):
    from yuebing.store import MooncakeDistributedStore
    for bad in ("_system", "bad\nname", "x" * 129):
        store = MooncakeDistributedStore()
        assert store.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 * MiB, "tcp", "",
                           cluster.master_address, tenant_id=bad) == -600
    # Empty means "default": it sees the default tenant's keys.
    store = new_store(cluster.master_address, tenant_id="")
    plain = new_store(cluster.master_address)
    try:
        assert plain.put("empty-tenant", b"v") == 0 and store.get("empty-tenant") == b"v"
        assert store.remove("empty-tenant") == 0
    finally:
        store.close()
        plain.close()


def test_quota_api_needs_multi_tenancy(cluster):
    status, body = admin(cluster, "GET", "/api/v1/tenant_quotas")
    assert status == 409 and body["error_code"] == -1011
    status, body = admin(cluster, "PUT", "/api/v1/tenant_quotas?tenant_id=x",
                         {"requested_quota_bytes": MiB})
    assert status == 409 and body["error_code"] == -1011


@pytest.fixture
def quota_cluster(private_cluster, tmp_path):
    policy = tmp_path / "tenant_quotas.yaml"
    policy.write_text("version: 1\ntenants:\n  - name: team-a\n    quota: 4MB\n"
                      "  - name: team-b\n    quota: 64MB\n")
    cluster = private_cluster(stores=1, store_size="128MB", master_flags=[
        "--enable_multi_tenants=true", "--tenant_quota_connector_type=file",
        f"--tenant_quota_connector_uri={policy}"])
    cluster.policy = policy
    return cluster


def test_writes_need_a_policy_and_stay_within_the_quota(quota_cluster):
    c = quota_cluster
    a = new_store(c.master_address, tenant_id="team-a")
    b = new_store(c.master_address, tenant_id="team-b")
    stranger = new_store(c.master_address, tenant_id="nobody")
    try:
        assert stranger.put("k", b"v") == TENANT_NOT_REGISTERED
        assert stranger.get("k") == b"" and stranger.is_exist("k") == 0  # reads need none
        pinned = ReplicateConfig()
        pinned.with_hard_pin = True
        value = b"p" * MiB
        for i in range(4):
            assert a.put(f"pinned-{i}", value, pinned) == 0
        # Hard-pinned objects cannot be evicted to make room: the put is refused.
        assert a.put("one-more", value) == TENANT_QUOTA_EXCEEDED
        assert b.put("one-more", value) == 0  # another tenant's quota is its own
        status, body = admin(c, "GET", "/api/v1/tenant_quotas?tenant_id=team-a")
        snap = body["data"]
        assert status == 200 and snap["tenant_id"] == "team-a"
        assert snap["requested_quota_bytes"] == 4 * MiB == snap["effective_quota_bytes"]
        assert snap["charged_bytes"] == 4 * MiB and snap["has_explicit_policy"]
        assert not snap["admission_closed"] and not snap["over_quota"]
        # Unpinned objects of the tenant make room for its new ones; other tenants' stay.
        for i in range(4):
            assert a.remove(f"pinned-{i}", True) == 0
        for i in range(12):
            assert a.put(f"churn-{i}", bytes([i]) * MiB) == 0, i
        kept = [i for i in range(12) if a.is_exist(f"churn-{i}") == 1]
        assert 11 in kept and len(kept) <= 4
        assert all(a.get(f"churn-{i}") == bytes([i]) * MiB for i in kept)
        assert b.get("one-more") == value
        _, body = admin(c, "GET", "/api/v1/tenant_quotas?tenant_id=team-a")
        assert body["data"]["charged_bytes"] <= 4 * MiB
        # Upstream's counters: the refused put, and the memory evicted for team-a's quota.
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{c.metrics_port}/metrics").read().decode()
        counters = dict(re.findall(r'^(mooncake_tenant_\w+_total\{[^}]*\}) (\d+)$', metrics, re.M))
        assert int(counters['mooncake_tenant_quota_reject_total'
                            '{tenant_id="team-a",reason="quota_exceeded"}']) >= 1
        assert int(counters['mooncake_tenant_evict_bytes_total{tenant_id="team-a"}']) >= 8 * MiB
        assert int(counters['mooncake_tenant_evict_bytes_total{tenant_id="team-b"}']) == 0
    finally:
        for s in (a, b, stranger):
            s.close()


def test_admin_api_changes_and_persists_policies(quota_cluster):
    c = quota_cluster
    status, body = admin(c, "GET", "/api/v1/tenant_quotas")
    assert status == 200 and [t["tenant_id"] for t in body["data"]] == ["team-a", "team-b"]
    assert admin(c, "GET", "/api/v1/tenant_quotas?tenant_id=team-c")[0] == 404
    assert admin(c, "GET", "/api/v1/tenant_quotas?tenant_id=_bad")[0] == 400
    for bad in ({}, {"requested_quota_bytes": 0}, {"requested_quota_bytes": 1 << 63}):
        status, body = admin(c, "PUT", "/api/v1/tenant_quotas?tenant_id=team-c", bad)
        assert status == 400 and body["error_code"] == -600, bad
    status, body = admin(c, "PUT", "/api/v1/tenant_quotas?tenant_id=team-c",
                         {"requested_quota_bytes": 2 * MiB})
    assert status == 200 and body["data"]["requested_quota_bytes"] == 2 * MiB
    assert 'name: "team-c"' in c.policy.read_text() and str(2 * MiB) in c.policy.read_text()
    store = new_store(c.master_address, tenant_id="team-c")
    try:
        assert store.put("k", b"v" * 1000) == 0
        status, body = admin(c, "DELETE", "/api/v1/tenant_quotas?tenant_id=team-c")
        assert status == 409 and body["error_code"] == TENANT_NOT_EMPTY
        assert store.put("k2", b"v") == 0  # admission reopened
        assert store.remove_all(True) == 2
        status, _ = admin(c, "DELETE", "/api/v1/tenant_quotas?tenant_id=team-c")
        assert status == 200 and "team-c" not in c.policy.read_text()
        assert store.put("k3", b"v") == TENANT_NOT_REGISTERED
        assert admin(c, "GET", "/api/v1/tenant_quotas?tenant_id=team-c")[0] == 404
        assert admin(c, "DELETE", "/api/v1/tenant_quotas?tenant_id=team-c")[0] == 404
    finally:
        store.close()
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{c.metrics_port}/metrics").read().decode()
    assert 'mooncake_tenant_quota_requested_bytes{tenant_id="team-a"} 4194304' in metrics
    # A restarted master reads the policy file it rewrote.
    c.restart_master()
    status, body = admin(c, "GET", "/api/v1/tenant_quotas")
    assert [t["tenant_id"] for t in body["data"]] == ["team-a", "team-b"]


def test_a_bad_policy_file_stops_the_master(private_cluster, tmp_path):
    from conftest import Process, master_binary, free_port
    for text, why in (("version: 2\ntenants: []\n", "version"),
                      ("version: 1\ntenants:\n  - name: a\n    quota: 1XB\n", "unit"),
                      ("version: 1\ntenants:\n  - name: a\n    quota: 0\n", "positive")):
        policy = tmp_path / "p.yaml"
        policy.write_text(text)
        proc = Process([str(master_binary()), f"--rpc_port={free_port()}",
                        f"--metrics_port={free_port()}", "--enable_multi_tenants",
                        f"--tenant_quota_connector_uri={policy}"], "bad-master")
        assert proc.proc.wait(timeout=10) == 2
        proc.stop()
        assert why in "\n".join(proc.lines), proc.lines
