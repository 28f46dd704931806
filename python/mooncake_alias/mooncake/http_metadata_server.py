"""Mooncake's `mooncake.http_metadata_server`: `python -m mooncake.http_metadata_server [--host H]
[--port P] [--log-level L]` runs yuebing's HTTP metadata server (C++, packaged in yuebing/bin) with
upstream's command line; `KVBootstrapServer` and `KVPoll` are upstream's in-process server class
(yuebing.bootstrap_server: the same server as a child process)."""

import argparse
from typing import List, Optional

from yuebing._cli import upstream_metadata_server as main
from yuebing.bootstrap_server import KVBootstrapServer, KVPoll

__all__ = ["main", "parse_args", "KVBootstrapServer", "KVPoll"]


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    """Upstream's command line: --port (8080), --host ("0.0.0.0"), --log-level ("INFO"; DEBUG,
    INFO, WARNING, ERROR or CRITICAL). `argv` None: sys.argv[1:]."""
    parser = argparse.ArgumentParser(description="HTTP Metadata Server for Mooncake",
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--port", type=int, default=8080, help="Port to listen on")
    parser.add_argument("--host", type=str, default="0.0.0.0", help="Host to bind to")
    parser.add_argument("--log-level", type=str,
                        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"], default="INFO",
                        help="Logging level")
    return parser.parse_args(argv)


if __name__ == "__main__":
    main()
