"""Alias of yuebing.async_store (Mooncake's `mooncake.async_store`)."""

from yuebing.async_store import *  # noqa: F401,F403
from yuebing.async_store import __all__  # noqa: F401
