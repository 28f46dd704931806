"""`KVBootstrapServer` and `KVPoll` of upstream's `mooncake.http_metadata_server`.

Upstream's class serves the HTTP metadata protocol (`/metadata?key=...`, GET/PUT/DELETE) from an
aiohttp loop on a thread of the caller's process. Here the same protocol is served by yuebing's
metadata server (yuebing-metadata-server, the C++ server of `--enable_http_metadata_server`),
run as a child process: one implementation of the protocol, its key rules and error bodies, and
no event loop or GIL shared with the caller. The public surface is upstream's: construct with a
port (0: a free one, readable from `port` after `run()`), `run()`, `poll()`, `close()`.

Thread safety: one thread calls run()/close(); poll() may be called from any thread.
"""
from __future__ import annotations

import enum
import subprocess
import tempfile
import threading
from typing import Optional

from yuebing._cli import binary_path

_READY = "yuebing-metadata-server listening on "
_START_TIMEOUT_S = 10.0


class KVPoll(enum.Enum):
    """Status of a KVBootstrapServer, numbered as upstream's."""
    Failed = 0
    Bootstrapping = 1
    WaitingForInput = 2
    Transferring = 3
    Success = 4


class KVBootstrapServer:
    """An HTTP metadata server owned by this object (a child process; see the module doc)."""

    def __init__(self, port: int, host: str = "0.0.0.0"):
        if not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be 0..65535, got {port!r}")
        if not host:
            raise ValueError("host must not be empty")
        self.port = port
        self.host = host
        self._proc: Optional[subprocess.Popen] = None
        self._log = None
        self._lock = threading.Lock()

    def run(self) -> subprocess.Popen:
        """Starts the server and returns once it listens (its child process; upstream returns its
        thread). Raises RuntimeError when it cannot listen (port taken, bad host) within 10 s."""
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                return self._proc
            # Its log goes to a file, never a pipe nobody reads (a full pipe would stall it).
            log = tempfile.TemporaryFile(mode="w+")
            proc = subprocess.Popen(
                [str(binary_path("yuebing-metadata-server")), f"--host={self.host}",
                 f"--port={self.port}"],
                stdout=subprocess.PIPE, stderr=log, text=True)
            line = self._ready_line(proc)
            if line is None:
                proc.kill()
                proc.wait()
                proc.stdout.close()
                log.seek(0)
                error = log.read().strip()[-500:]
                log.close()
                raise RuntimeError(f"metadata server on {self.host}:{self.port} did not start: "
                                   f"{error}")
            self._log = log
            self.port = int(line.rsplit(":", 1)[1])
            self._proc = proc
            return proc

    @staticmethod
    def _ready_line(proc: subprocess.Popen) -> Optional[str]:
        found: list = []
        reader = threading.Thread(target=lambda: found.append(proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(_START_TIMEOUT_S)
        line = found[0].strip() if found else ""
        return line if line.startswith(_READY) else None

    def poll(self) -> KVPoll:
        """Success while the server runs, Failed before run() and after it stopped."""
        proc = self._proc
        return KVPoll.Success if proc is not None and proc.poll() is None else KVPoll.Failed

    def close(self) -> None:
        """Stops the server (SIGTERM, then SIGKILL after 5 s); its keys are gone. Idempotent."""
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        proc.stdout.close()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001  (interpreter shutdown)
            pass
