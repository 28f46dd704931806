"""MOONCAKE_* environment variables, the JSON config file and the `mooncake` alias package."""

import json

import pytest

from yuebing.config import (
    DEFAULT_GLOBAL_SEGMENT_SIZE,
    DEFAULT_LOCAL_BUFFER_SIZE,
    MooncakeConfig,
    parse_size,
)

ENV_VARS = ["MOONCAKE_CONFIG_PATH", "MOONCAKE_MASTER", "MOONCAKE_TE_META_DATA_SERVER",
            "MOONCAKE_PROTOCOL", "MOONCAKE_DEVICE", "MOONCAKE_GLOBAL_SEGMENT_SIZE",
            "MOONCAKE_LOCAL_BUFFER_SIZE", "MOONCAKE_LOCAL_HOSTNAME"]


@pytest.fixture
def clean_env(monkeypatch):
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize("text,expected", [
    (4096, 4096), ("4096", 4096), ("16MB", 16 << 20), ("16mb", 16 << 20), ("4GB", 4 << 30),
    ("1.5 GiB", 3 << 29), ("512k", 512 << 10), ("2T", 2 << 40), ("100B", 100),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "lots", "-5", "12XB", -1, None, True])
def test_parse_size_errors(text):
    with pytest.raises(ValueError):
        parse_size(text)


def test_load_from_env(clean_env):
    clean_env.setenv("MOONCAKE_MASTER", "10.0.0.1:50051")
    clean_env.setenv("MOONCAKE_PROTOCOL", "TCP")
    clean_env.setenv("MOONCAKE_GLOBAL_SEGMENT_SIZE", "4GB")
    clean_env.setenv("MOONCAKE_LOCAL_BUFFER_SIZE", "512MB")
    clean_env.setenv("MOONCAKE_TE_META_DATA_SERVER", "http://10.0.0.1:8080/metadata")
    clean_env.setenv("MOONCAKE_DEVICE", "mlx5_0")
    c = MooncakeConfig.load_from_env()
    assert c.master_server_address == "10.0.0.1:50051"
    assert c.protocol == "tcp"
    assert c.global_segment_size == 4 << 30
    assert c.local_buffer_size == 512 << 20
    assert c.metadata_server == "http://10.0.0.1:8080/metadata"
    assert c.device_name == "mlx5_0"
    assert c.local_hostname == "localhost"
    assert c.setup_args() == ("localhost", "http://10.0.0.1:8080/metadata", 4 << 30, 512 << 20,
                              "tcp", "mlx5_0", "10.0.0.1:50051")


def test_load_from_env_defaults(clean_env):
    clean_env.setenv("MOONCAKE_MASTER", "m:1")
    c = MooncakeConfig.load_from_env()
    assert c.metadata_server == "P2PHANDSHAKE"
    assert c.global_segment_size == DEFAULT_GLOBAL_SEGMENT_SIZE
    assert c.local_buffer_size == DEFAULT_LOCAL_BUFFER_SIZE
    assert (c.protocol, c.device_name) == ("tcp", "")


def test_load_from_env_needs_master(clean_env):
    with pytest.raises(ValueError):
        MooncakeConfig.load_from_env()
    clean_env.setenv("MOONCAKE_MASTER", "m:1")
    clean_env.setenv("MOONCAKE_GLOBAL_SEGMENT_SIZE", "huge")
    with pytest.raises(ValueError):
        MooncakeConfig.load_from_env()


def test_config_file(clean_env, tmp_path):
    path = tmp_path / "mooncake.json"
    path.write_text(json.dumps({
        "local_hostname": "127.0.0.1",
        "metadata_server": "P2PHANDSHAKE",
        "global_segment_size": "1GB",
        "local_buffer_size": 1 << 20,
        "protocol": "rdma",
        "device_name": "",
        "master_server_address": "127.0.0.1:50051",
    }))
    clean_env.setenv("MOONCAKE_CONFIG_PATH", str(path))
    clean_env.setenv("MOONCAKE_MASTER", "ignored:1")  # the file wins
    c = MooncakeConfig.load_from_env()
    assert (c.global_segment_size, c.local_buffer_size) == (1 << 30, 1 << 20)
    assert c.protocol == "rdma" and c.master_server_address == "127.0.0.1:50051"
    path.write_text(json.dumps({"local_hostname": "h", "metadata_server": "P2PHANDSHAKE"}))
    with pytest.raises(ValueError):
        MooncakeConfig.from_file(str(path))


def test_setup_from_env(cluster, clean_env):
    from yuebing.store import MooncakeDistributedStore

    clean_env.setenv("MOONCAKE_MASTER", cluster.master_address)
    clean_env.setenv("MOONCAKE_LOCAL_HOSTNAME", "127.0.0.1")
    clean_env.setenv("MOONCAKE_GLOBAL_SEGMENT_SIZE", "8MB")
    clean_env.setenv("MOONCAKE_LOCAL_BUFFER_SIZE", "16MB")
    s = MooncakeDistributedStore()
    assert s.setup_from_env() == 0
    assert s.put("from-env", b"1") == 0 and s.get("from-env") == b"1"
    s.close()


def test_mooncake_alias_resolves_to_yuebing():
    import mooncake
    import yuebing.engine
    import yuebing.store
    from mooncake.engine import TransferEngine, TransferOpcode
    from mooncake.mooncake_config import MooncakeConfig as AliasConfig
    from mooncake.store import MooncakeDistributedStore, ReplicateConfig

    assert mooncake.IMPLEMENTATION == "yuebing"
    assert MooncakeDistributedStore is yuebing.store.MooncakeDistributedStore
    assert ReplicateConfig is yuebing.store.ReplicateConfig
    assert TransferEngine is yuebing.engine.TransferEngine
    assert TransferOpcode is yuebing.engine.TransferOpcode
    assert AliasConfig is MooncakeConfig
    s = MooncakeDistributedStore()
    assert s.put("k", b"v") == -600  # not set up: a code, not a crash
