"""The cache survives its master, through upstream's Python API (the `mooncake` alias): objects
put before a kill -9 of a lone master, or of the HA leader (real etcd, two masters), are readable
byte-exact once the master is back, because the stores report what their segments hold."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import tempfile
import time

import pytest

from conftest import Process, free_port, master_binary, store_binary, cluster_missing_reason

OBJECTS = 2000
SIZE = 4096


def value_for(key: str) -> bytes:
    seed = hashlib.sha256(key.encode()).digest()
    return (seed * (SIZE // len(seed) + 1))[:SIZE]


def keys_for(prefix: str):
    return [f"{prefix}-{i}" for i in range(OBJECTS)]


def alias_store(master_address: str):
    from mooncake.store import MooncakeDistributedStore

    store = MooncakeDistributedStore()
    assert store.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", master_address) == 0
    return store


def put_all(store, keys) -> None:
    for start in range(0, len(keys), 250):
        chunk = keys[start:start + 250]
        assert store.put_batch(chunk, [value_for(k) for k in chunk]) == 0


def census(store, keys):
    """(exact, wrong) over `keys`."""
    exact = wrong = 0
    for start in range(0, len(keys), 500):
        chunk = keys[start:start + 500]
        for key, got in zip(chunk, store.get_batch(chunk)):
            if not got:
                continue
            if got == value_for(key):
                exact += 1
            else:
                wrong += 1
    return exact, wrong


def wait_readable(store, keys, want: int, timeout: float):
    """Polls until `want` keys are exact; returns (exact, wrong, seconds)."""
    start = time.monotonic()
    exact = wrong = 0
    while time.monotonic() - start < timeout:
        exact, w = census(store, keys)
        wrong += w
        if exact >= want:
            break
        time.sleep(0.1)
    return exact, wrong, time.monotonic() - start


def test_objects_survive_a_kill_nine_and_restart_of_a_lone_master(private_cluster):
    c = private_cluster(stores=2, store_size="64MB")
    store = alias_store(c.master_address)
    keys = keys_for("lone")
    put_all(store, keys)
    c.restart_master()
    exact, wrong, took = wait_readable(store, keys, OBJECTS, 10.0)
    print(f"lone master restart: {exact}/{OBJECTS} readable in {took:.2f} s, {wrong} wrong")
    assert wrong == 0
    assert exact == OBJECTS
    assert took <= 5.0
    # The restored objects behave as any other; new puts find room beside them.
    assert store.remove(keys[0]) == 0
    assert store.get(keys[0]) == b""
    assert store.put("after-restart", b"x" * 1000) == 0
    assert store.get("after-restart") == b"x" * 1000
    store.close()


def test_objects_survive_a_kill_nine_of_the_ha_leader():
    reason = cluster_missing_reason()
    if reason:
        pytest.skip(reason)
    etcd_binary = shutil.which("etcd")
    if etcd_binary is None:
        pytest.skip("etcd not installed (Debian: etcd-server)")
    data = tempfile.mkdtemp(prefix="yb-etcd-")
    client_port, peer_port = free_port(), free_port()
    endpoint = f"127.0.0.1:{client_port}"
    processes = []
    store = None
    try:
        etcd = Process([etcd_binary, "--data-dir", data, "--name", "yb",
                        f"--listen-client-urls=http://{endpoint}",
                        f"--advertise-client-urls=http://{endpoint}",
                        f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
                        f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
                        f"--initial-cluster=yb=http://127.0.0.1:{peer_port}"], "etcd")
        processes.append(etcd)
        etcd.wait_for("ready to serve client requests")
        cluster_id = f"py-ha-{os.getpid()}"
        masters = []  # (process, its gRPC address)
        for _ in range(2):
            rpc_port = free_port()
            m = Process([str(master_binary()), "--enable_ha", f"--etcd_endpoints={endpoint}",
                         f"--cluster_id={cluster_id}", "--ha_lease_ttl_sec=2",
                         "--rpc_address=127.0.0.1", f"--rpc_port={rpc_port}",
                         f"--metrics_port={free_port()}"], "yuebing-master")
            processes.append(m)
            masters.append((m, f"127.0.0.1:{rpc_port}"))
            m.wait_for("yuebing-master listening")
        address = f"etcd://{endpoint}?cluster_id={cluster_id}"
        for _ in range(2):
            s = Process([str(store_binary()), f"--master_server_address={address}",
                         "--global_segment_size=64MB", "--rpc_timeout_ms=1000"], "yuebing-store")
            processes.append(s)
            s.wait_for("yuebing-store ready")
        store = alias_store(address)
        keys = keys_for("ha")
        put_all(store, keys)
        leader = next(m for m, addr in masters
                      if any(f"{addr} is the leader" in line for line in m.lines))
        killed = time.monotonic()
        leader.stop(signal.SIGKILL)
        exact, wrong, _ = wait_readable(store, keys, OBJECTS * 995 // 1000, 10.0)
        took = time.monotonic() - killed
        print(f"HA leader kill -9: {exact}/{OBJECTS} readable {took:.2f} s after the kill, "
              f"{wrong} wrong")
        assert wrong == 0
        assert exact * 1000 >= OBJECTS * 995
        assert took <= 5.0
    finally:
        if store is not None:
            store.close()
        for p in reversed(processes):
            p.stop(signal.SIGKILL)
        shutil.rmtree(data, ignore_errors=True)
