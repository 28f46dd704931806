"""The real client of Mooncake's real/dummy split: `yuebing-client`, also `mooncake_client`.

    yuebing-client --master_server_address=10.0.0.1:50051 --global_segment_size=4GB \\
        --metadata_server=P2PHANDSHAKE --protocol=tcp [--host=10.0.0.2] [--port=50052]

One real client per host owns what a rank would otherwise set up itself: the memory it lends to
the cluster (``--global_segment_size``) and its transfer engine. Ranks in other processes call
``MooncakeDistributedStore.setup_dummy(mem_pool_size, local_buffer_size, "host:50052")``: a
dummy asks this process for the cluster's settings (``GET /v1/dummy_setup`` on ``--port``, JSON)
and becomes a client that lends no memory. Its data then moves straight between its own
registered buffers and the stores' segments (same-host shared memory for segments on its host,
this one included), not relayed through this process as upstream relays it. So a dummy that dies
loses nothing (it holds no objects), and a real client that dies takes only its own segment's
objects with it: the dummies keep working against the rest of the cluster, with errors (never a
crash or a hang) for what was on it.

Flags are upstream's (``--flag=value`` or ``--flag value``; booleans as gflags spells them):
host, port, metadata_server, device_names, master_server_address, protocol,
global_segment_size, local_buffer_size, tenant_id, threads, enable_offload,
start_offload_rpc_server, enable_http_server, http_port, log_dir, use_mmap_arena_allocator,
mmap_arena_pool_size. ``threads``, ``start_offload_rpc_server``, ``log_dir`` and the two mmap
arena flags are accepted and have no effect (the transfer
engine sizes its own threads; the disk tier is served by the engine's port; logs go to stderr).
Prints ``yuebing-client ready port=<port> segment=<name>`` once serving; SIGINT/SIGTERM unmount
the segment and exit 0. Exit status 2 for bad flags, 1 when the store cannot be set up.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional

from yuebing._signals import unblock_shutdown_signals
from yuebing.config import parse_bool, parse_size

logger = logging.getLogger("yuebing.real_client")

DUMMY_SETUP_PATH = "/v1/dummy_setup"
DEFAULT_PORT = 50052


def _bool_flag(parser: argparse.ArgumentParser, name: str, default: bool, help_text: str) -> None:
    """A gflags boolean: --name, --name=true|false|1|0|yes|no, --noname."""
    parser.add_argument(f"--{name}", nargs="?", const=True, default=default, type=parse_bool,
                        help=help_text)
    parser.add_argument(f"--no{name}", dest=name, action="store_false", help=argparse.SUPPRESS)


def parse_arguments(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="yuebing-client",
        description="Real client of the real/dummy split (Mooncake's mooncake_client).")
    parser.add_argument("--host", default="0.0.0.0",
                        help="address to listen on and to be reached at (0.0.0.0: every "
                        "interface, reached at this host's address)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="dummy-client port")
    parser.add_argument("--metadata_server", default="http://127.0.0.1:8080/metadata",
                        help="transfer engine metadata (P2PHANDSHAKE, http://..., etcd://...)")
    parser.add_argument("--device_names", default="", help="RDMA devices")
    parser.add_argument("--master_server_address", default="127.0.0.1:50051")
    parser.add_argument("--protocol", default="tcp")
    parser.add_argument("--global_segment_size", default="4 GB", type=parse_size)
    parser.add_argument("--local_buffer_size", default="0", type=parse_size)
    parser.add_argument("--tenant_id", default="default")
    parser.add_argument("--threads", type=int, default=1, help="accepted, no effect")
    _bool_flag(parser, "enable_offload", False, "keep a disk tier (--ssd_offload_path)")
    _bool_flag(parser, "start_offload_rpc_server", True, "accepted, no effect")
    _bool_flag(parser, "enable_http_server", False, "serve the client's HTTP status pages")
    parser.add_argument("--http_port", type=int, default=9300)
    parser.add_argument("--ssd_offload_path", default="", help="yuebing: disk tier directory")
    parser.add_argument("--log_dir", default="", help="accepted, no effect")
    # upstream's store library defines these for its mmap buffer arena (no such arena here)
    _bool_flag(parser, "use_mmap_arena_allocator", False, "accepted, no effect")
    parser.add_argument("--mmap_arena_pool_size", default="8GB", type=parse_size,
                        help="accepted, no effect")
    args = parser.parse_args(argv)
    for name in ("port", "http_port"):
        if not 0 < getattr(args, name) < 65536:
            parser.error(f"--{name} must be 1..65535")
    if args.global_segment_size <= 0:
        parser.error("--global_segment_size must be > 0")
    return args


def reachable_host(host: str) -> str:
    """The address peers reach this host at: `host`, or for a wildcard the address of the
    interface that routes outwards (no packet is sent), 127.0.0.1 when there is none."""
    if host not in ("", "0.0.0.0", "::"):
        return host
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # TEST-NET-1: only picks a route
        return probe.getsockname()[0]
    except OSError:
        return "127.0.0.1"
    finally:
        probe.close()


class RealClient:
    """The store this process sets up and the settings it hands to dummies. Thread-safe."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.hostname = reachable_host(args.host)
        self.store = None

    def setup(self) -> int:
        from yuebing.store import MooncakeDistributedStore

        store = MooncakeDistributedStore()
        rc = store.setup(self.hostname, self.args.metadata_server,
                         self.args.global_segment_size, self.args.local_buffer_size,
                         self.args.protocol, self.args.device_names,
                         self.args.master_server_address,
                         enable_ssd_offload=self.args.enable_offload,
                         ssd_offload_path=self.args.ssd_offload_path,
                         tenant_id=self.args.tenant_id,
                         enable_client_http_server=self.args.enable_http_server,
                         client_http_port=self.args.http_port)
        if rc == 0:
            self.store = store
        return rc

    def dummy_setup(self) -> Dict[str, Any]:
        """What a dummy needs to join the same cluster as a client that lends no memory."""
        return {"master_server_address": self.args.master_server_address,
                "metadata_server": self.args.metadata_server,
                "protocol": self.args.protocol,
                "device_names": self.args.device_names,
                "tenant_id": self.args.tenant_id,
                "segment": self.store.get_hostname() if self.store is not None else ""}

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None


def _handler(real_client: RealClient):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path.split("?", 1)[0] != DUMMY_SETUP_PATH:
                self._reply(404, {"error": f"no such path: {self.path}"})
                return
            self._reply(200, real_client.dummy_setup())

        def _reply(self, status: int, body: Dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, fmt: str, *args: Any) -> None:
            logger.debug(fmt, *args)

    return Handler


def main(argv: Optional[List[str]] = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    unblock_shutdown_signals()
    args = parse_arguments(argv)
    real_client = RealClient(args)
    try:
        server = ThreadingHTTPServer((args.host, args.port), _handler(real_client))
    except OSError as e:
        print(f"yuebing-client: cannot listen on {args.host}:{args.port}: {e}", file=sys.stderr)
        return 1
    server.daemon_threads = True
    rc = real_client.setup()
    if rc != 0:
        print(f"yuebing-client: store setup failed with code {rc}", file=sys.stderr)
        server.server_close()
        return 1
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    serving = threading.Thread(target=server.serve_forever, name="dummy-setup", daemon=True)
    serving.start()
    print(f"yuebing-client ready port={args.port} segment={real_client.store.get_hostname()}",
          flush=True)
    while not stop.wait(1.0):
        pass
    server.shutdown()
    server.server_close()
    real_client.close()
    return 0


def sync_main() -> None:
    sys.exit(main())


if __name__ == "__main__":
    sync_main()
