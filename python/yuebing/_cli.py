"""Console scripts: `yuebing-master`, `yuebing-store` and `yuebing-metadata-server`.

The wheel carries the C++ binaries in yuebing/bin/; each entry point replaces the Python process
with its binary (same arguments, same exit status, signals go straight to it).
"""
import os
import sys
from pathlib import Path

BIN_DIR = Path(__file__).resolve().parent / "bin"


def binary_path(name: str) -> Path:
    """Path of the packaged binary `name`; raises FileNotFoundError when the wheel lacks it."""
    path = BIN_DIR / name
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(f"{path} is missing: this yuebing install has no binaries "
                                "(reinstall with `pip install .`)")
    return path


def _exec(name: str) -> None:
    try:
        path = binary_path(name)
    except FileNotFoundError as error:
        sys.stderr.write(f"{name}: {error}\n")
        sys.exit(127)
    os.execv(path, [name, *sys.argv[1:]])


def master() -> None:
    _exec("yuebing-master")


def store() -> None:
    _exec("yuebing-store")


def metadata_server() -> None:
    _exec("yuebing-metadata-server")


def _without_log_level(args: list) -> list:
    """`args` without upstream's `--log-level LEVEL` / `--log-level=LEVEL` (Python logging levels;
    the C++ server logs at info), everything else kept for the binary to parse."""
    kept = []
    skip_value = False
    for arg in args:
        if skip_value:
            skip_value = False
        elif arg in ("--log-level", "--log_level"):
            skip_value = True
        elif not arg.startswith(("--log-level=", "--log_level=")):
            kept.append(arg)
    return kept


def upstream_metadata_server() -> None:
    """`mooncake_http_metadata_server` and `python -m mooncake.http_metadata_server`: upstream's
    command line (`--host`, `--port`, `--log-level`) on yuebing-metadata-server."""
    sys.argv[1:] = _without_log_level(sys.argv[1:])
    _exec("yuebing-metadata-server")
