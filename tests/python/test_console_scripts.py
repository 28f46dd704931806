"""The README's Python quick start through the installed console scripts: `pip install .` puts
yuebing-master, yuebing-store and yuebing-metadata-server on PATH (they exec the binaries packaged
in yuebing/bin), and a client put/get goes through a cluster started with them alone."""
import importlib.metadata
import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from conftest import Process, free_port, new_store

# console script -> the binary it runs
SCRIPTS = {"yuebing-master": "yuebing-master", "yuebing-store": "yuebing-store",
           "yuebing-metadata-server": "yuebing-metadata-server",
           "mooncake_master": "yuebing-master",
           "mooncake_http_metadata_server": "yuebing-metadata-server"}


def installed_script(name: str) -> Path:
    """The console script `name` of the installed yuebing distribution (fails if absent)."""
    entry = [e for e in importlib.metadata.entry_points(group="console_scripts") if e.name == name]
    assert entry, f"no console script {name} registered"
    assert entry[0].value.startswith("yuebing._cli:"), entry[0].value
    found = shutil.which(name) or shutil.which(name, path=sysconfig.get_path("scripts"))
    assert found, f"{name} is registered but not on PATH nor in {sysconfig.get_path('scripts')}"
    return Path(found)


@pytest.fixture(scope="module")
def scripts():
    try:
        importlib.metadata.distribution("yuebing")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("yuebing is not pip-installed here (tests run from the source tree)")
    return {name: installed_script(name) for name in SCRIPTS}


@pytest.mark.parametrize("name", SCRIPTS)
def test_console_script_runs_its_binary(scripts, name):
    result = subprocess.run([str(scripts[name]), "--help"], capture_output=True, text=True,
                            timeout=30)
    out = result.stdout + result.stderr
    # The binary's own flag list, not a Python wrapper's.
    assert "--" in out and SCRIPTS[name] in out, out[-2000:]
    bogus = subprocess.run([str(scripts[name]), "--no_such_flag_xyz"], capture_output=True,
                           text=True, timeout=30)
    assert bogus.returncode != 0, "an unknown flag must fail the binary"


@pytest.mark.parametrize("master_argv", [
    lambda rpc, metrics: ["yuebing-master", f"--rpc_port={rpc}", "--rpc_address=127.0.0.1",
                          f"--metrics_port={metrics}"],
    # A command line written for upstream's mooncake_master.
    lambda rpc, metrics: ["mooncake_master", f"--port={rpc}", "--rpc_address=127.0.0.1",
                          f"--metrics_port={metrics}", "--max_threads=8", "-v=1",
                          "--enable_gc=false"],
], ids=["yuebing-master", "mooncake_master"])
def test_quick_start_master_store_put_get(scripts, master_argv):
    rpc_port, metrics_port = free_port(), free_port()
    argv = master_argv(rpc_port, metrics_port)
    master = Process([str(scripts[argv[0]]), *argv[1:]], f"{argv[0]} (console script)")
    store_server = None
    client = None
    try:
        master.wait_for("yuebing-master listening")
        store_server = Process([str(scripts["yuebing-store"]),
                                f"--master_server_address=127.0.0.1:{rpc_port}",
                                "--global_segment_size=64MB"], "yuebing-store (console script)")
        store_server.wait_for("yuebing-store ready")
        client = new_store(f"127.0.0.1:{rpc_port}")
        value = os.urandom(100_000)
        assert client.put("quick-start", value) == 0
        assert client.get("quick-start") == value
        assert client.get("absent-key") == b""
    finally:
        if client is not None:
            client.close()
        if store_server is not None:
            store_server.stop()
        master.stop()
    assert master.proc.returncode == 0, "\n".join(master.lines[-20:])


def _wait_for_metadata_server(port: int, timeout: float = 15.0) -> None:
    import time
    import urllib.request

    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.mark.parametrize("how", ["python -m mooncake.http_metadata_server",
                                 "mooncake_http_metadata_server"])
def test_upstream_metadata_server_command_lines(scripts, how):
    # SGLang's and upstream's docs start the metadata server with these command lines and flags
    # (`--log-level` is a Python logging level upstream; accepted and dropped here).
    import sys
    import urllib.request

    port = free_port()
    flags = ["--port", str(port), "--host", "127.0.0.1", "--log-level", "INFO"]
    if how.startswith("python"):
        argv = [sys.executable, "-m", "mooncake.http_metadata_server", *flags]
    else:
        argv = [str(scripts[how]), *flags]
    server = Process(argv, how)
    try:
        _wait_for_metadata_server(port)
        url = f"http://127.0.0.1:{port}/metadata?key=%20upstream-key%20"
        put = urllib.request.Request(url, data=b"value", method="PUT")
        with urllib.request.urlopen(put, timeout=5) as reply:
            assert reply.read() == b"metadata updated"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metadata?key=upstream-key",
                                    timeout=5) as reply:
            assert reply.read() == b"value"
            assert reply.headers["Content-Type"] == "application/json"
    finally:
        server.stop()
