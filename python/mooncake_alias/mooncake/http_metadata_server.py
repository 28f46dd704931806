"""Mooncake's `mooncake.http_metadata_server`: `python -m mooncake.http_metadata_server [--host H]
[--port P] [--log-level L]` runs yuebing's HTTP metadata server (C++, packaged in yuebing/bin) with
upstream's command line; `KVBootstrapServer` and `KVPoll` are upstream's in-process server class
(yuebing.bootstrap_server: the same server as a child process)."""

from yuebing._cli import upstream_metadata_server as main
from yuebing.bootstrap_server import KVBootstrapServer, KVPoll

__all__ = ["main", "KVBootstrapServer", "KVPoll"]

if __name__ == "__main__":
    main()
