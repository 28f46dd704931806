"""Fixtures: a real yuebing cluster on 127.0.0.1 (a yuebing-master and yuebing-store processes
from the build tree) and store clients connected to it.

Binaries are found under $YUEBING_BUILD_DIR (default: <repo>/build):
tools/master/yuebing-master and tools/store/yuebing-store. Tests that need a cluster are skipped,
with the reason, when a binary is missing; the rest (argument checks, the transfer engine) run.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional

import pytest

REPO = Path(__file__).resolve().parents[2]
STORE_SIZE = "256MB"
START_TIMEOUT_S = 20.0


def build_dir() -> Path:
    return Path(os.environ.get("YUEBING_BUILD_DIR", REPO / "build")).resolve()


def master_binary() -> Path:
    return build_dir() / "tools" / "master" / "yuebing-master"


def store_binary() -> Path:
    return build_dir() / "tools" / "store" / "yuebing-store"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Process:
    """A child process whose output lines are collected by a reader thread."""

    def __init__(self, argv: List[str], name: str, env: Optional[Dict[str, str]] = None):
        """`env`: the child's whole environment (default: this process's)."""
        self.name = name
        self.argv = argv
        self.lines: List[str] = []
        self._cond = threading.Condition()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, bufsize=1, start_new_session=True, env=env)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_for(self, text: str, timeout: float = START_TIMEOUT_S) -> str:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for line in self.lines:
                    if text in line:
                        return line
                if self.proc.poll() is not None and not self._reader.is_alive():
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(left, 0.2))
        raise RuntimeError(f"{self.name} did not print {text!r} within {timeout}s; output:\n"
                           + "\n".join(self.lines[-40:]))

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._reader.join(2)


class Cluster:
    """A yuebing-master and `stores` yuebing-store processes of STORE_SIZE each."""

    def __init__(self, stores: int = 2, store_size: str = STORE_SIZE,
                 master_flags: Optional[List[str]] = None,
                 store_flags: Optional[List[str]] = None):
        self.master: Optional[Process] = None
        self.stores: List[Process] = []
        self.store_segments: List[str] = []
        self.master_address = ""
        self.metrics_port = 0
        self._stores = stores
        self._store_size = store_size
        self._master_flags = master_flags or []
        self._store_flags = store_flags or []

    def start(self) -> "Cluster":
        rpc_port, metrics_port = free_port(), free_port()
        self.master_address = f"127.0.0.1:{rpc_port}"
        self.metrics_port = metrics_port
        self.master = Process([str(master_binary()), f"--rpc_port={rpc_port}",
                               "--rpc_address=127.0.0.1", f"--metrics_port={metrics_port}",
                               *self._master_flags], "yuebing-master")
        try:
            self.master.wait_for("yuebing-master listening")
            for _ in range(self._stores):
                self.add_store()
        except Exception:
            self.stop()
            raise
        return self

    def restart_master(self) -> None:
        """kill -9 of the master, then the same command again (same ports)."""
        assert self.master is not None
        argv = self.master.argv
        self.master.stop(signal.SIGKILL)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:  # the old socket may linger for a moment
            self.master = Process(argv, "yuebing-master")
            try:
                self.master.wait_for("yuebing-master listening", timeout=5)
                return
            except RuntimeError:
                self.master.stop(signal.SIGKILL)
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def add_store(self) -> Process:
        store = Process([str(store_binary()), f"--master_server_address={self.master_address}",
                         f"--global_segment_size={self._store_size}", *self._store_flags],
                        "yuebing-store")
        self.stores.append(store)
        line = store.wait_for("yuebing-store ready")
        for word in line.split():
            if word.startswith("segment="):
                self.store_segments.append(word[len("segment="):])
        return store

    def stop(self) -> None:
        for store in self.stores:
            store.stop()
        if self.master is not None:
            self.master.stop()


REAL_CLIENT_SEGMENT = "64MB"


def start_real_client(master_address: str, *flags: str) -> "RealClient":
    """A `yuebing-client` process (python -m yuebing.real_client, upstream's flags) joined to
    the master at `master_address`, lending REAL_CLIENT_SEGMENT; stop it with .proc.stop()."""
    port = free_port()
    proc = Process([sys.executable, "-m", "yuebing.real_client", "--host=127.0.0.1",
                    f"--port={port}", f"--master_server_address={master_address}",
                    "--metadata_server=P2PHANDSHAKE", "--protocol=tcp",
                    f"--global_segment_size={REAL_CLIENT_SEGMENT}", *flags], "yuebing-client")
    line = proc.wait_for("yuebing-client ready")
    segment = line.split("segment=")[1].strip()
    return RealClient(proc, f"127.0.0.1:{port}", segment)


class RealClient:
    """A running real client: its process, the address dummies use, its segment name."""

    def __init__(self, proc: Process, address: str, segment: str):
        self.proc, self.address, self.segment = proc, address, segment


def cluster_missing_reason() -> Optional[str]:
    for binary in (master_binary(), store_binary()):
        if not binary.exists():
            return f"{binary} not built (set YUEBING_BUILD_DIR)"
    return None


@pytest.fixture(scope="session")
def cluster():
    reason = cluster_missing_reason()
    if reason:
        pytest.skip(reason)
    c = Cluster().start()
    yield c
    c.stop()


@pytest.fixture
def private_cluster():
    """A cluster of its own for tests that kill processes: factory(stores=..., ...)."""
    reason = cluster_missing_reason()
    if reason:
        pytest.skip(reason)
    started: List[Cluster] = []

    def make(**kwargs) -> Cluster:
        c = Cluster(**kwargs).start()
        started.append(c)
        return c

    yield make
    for c in started:
        c.stop()


def new_store(master_address: str, segment: int = 0, **kwargs):
    from yuebing.store import MooncakeDistributedStore

    store = MooncakeDistributedStore()
    rc = store.setup(kwargs.pop("local_hostname", "127.0.0.1"),
                     kwargs.pop("metadata_server", "P2PHANDSHAKE"), segment,
                     kwargs.pop("local_buffer_size", 16 << 20), kwargs.pop("protocol", "tcp"),
                     kwargs.pop("rdma_devices", ""), master_address, **kwargs)
    assert rc == 0, f"setup failed with {rc}"
    return store


@pytest.fixture
def make_store(cluster):
    """factory(segment=0, **setup_kwargs) -> a set-up store; all are closed afterwards."""
    made = []

    def make(segment: int = 0, **kwargs):
        store = new_store(cluster.master_address, segment, **kwargs)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


@pytest.fixture
def store(make_store):
    """A set-up store on the shared cluster, emptied before the test."""
    s = make_store()
    assert s.remove_all(True) >= 0
    return s


def pytest_report_header(config) -> List[str]:
    reason = cluster_missing_reason()
    return [f"yuebing build dir: {build_dir()}" + (f" ({reason})" if reason else "")]

