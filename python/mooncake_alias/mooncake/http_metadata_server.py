"""Mooncake's `mooncake.http_metadata_server`: `python -m mooncake.http_metadata_server [--host H]
[--port P] [--log-level L]` runs yuebing's HTTP metadata server (C++, packaged in yuebing/bin) with
upstream's command line. Upstream's in-process `KVBootstrapServer` class is not provided."""

from yuebing._cli import upstream_metadata_server as main

__all__ = ["main"]

if __name__ == "__main__":
    main()
