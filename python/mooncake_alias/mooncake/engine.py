"""Alias of yuebing.engine (Mooncake's `mooncake.engine`)."""

from yuebing.engine import *  # noqa: F401,F403
from yuebing.engine import __all__  # noqa: F401
