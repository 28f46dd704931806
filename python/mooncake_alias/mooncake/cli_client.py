"""Mooncake's `mooncake.cli_client` (the `mooncake_client` command): yuebing's real client,
yuebing.real_client, which reads the same flags."""

from yuebing.real_client import main, sync_main  # noqa: F401  (re-exports)

if __name__ == "__main__":
    sync_main()
