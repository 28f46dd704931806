"""Alias of yuebing.config (Mooncake's `mooncake.mooncake_config`)."""

from yuebing.config import (  # noqa: F401
    DEFAULT_GLOBAL_SEGMENT_SIZE,
    DEFAULT_LOCAL_BUFFER_SIZE,
    MooncakeConfig,
    _parse_bool,
    _parse_segment_size,
    logger,
)
