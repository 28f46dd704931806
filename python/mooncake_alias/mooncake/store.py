"""Alias of yuebing.store (Mooncake's `mooncake.store`)."""

from yuebing.store import *  # noqa: F401,F403
from yuebing.store import __all__  # noqa: F401
