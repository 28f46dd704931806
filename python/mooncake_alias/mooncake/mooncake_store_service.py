"""Alias of yuebing.store_service (Mooncake's `mooncake.mooncake_store_service`).

This name and yuebing.store_service are one module object, so that what callers patch or set
here (`MooncakeDistributedStore`, `parse_arguments`, ...) is what the service uses.
`python -m mooncake.mooncake_store_service` runs the service."""

import sys

from yuebing import store_service as _service

if __name__ == "__main__":
    _service.sync_main()
else:
    sys.modules[__name__] = _service
