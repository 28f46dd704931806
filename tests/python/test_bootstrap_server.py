"""Upstream's `mooncake.http_metadata_server.KVBootstrapServer`, through the alias: a real server
on 127.0.0.1 spoken to over HTTP, and a transfer engine that uses it as its metadata server."""
import socket
import urllib.error
import urllib.request

import pytest

from mooncake.http_metadata_server import KVBootstrapServer, KVPoll


def call(port, method, key, body=None):
    url = f"http://127.0.0.1:{port}/metadata?key={urllib.request.quote(key)}"
    request = urllib.request.Request(url, data=body, method=method)
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@pytest.fixture
def server():
    s = KVBootstrapServer(port=0, host="127.0.0.1")
    assert s.poll() == KVPoll.Failed  # not started
    s.run()
    yield s
    s.close()


def test_the_metadata_protocol_round_trips(server):
    assert server.port > 0
    assert server.poll() == KVPoll.Success
    assert call(server.port, "PUT", "a/b", b"value") == (200, b"metadata updated")
    assert call(server.port, "GET", "a/b") == (200, b"value")
    assert call(server.port, "GET", "  a/b  ") == (200, b"value")  # keys are stripped
    assert call(server.port, "GET", "absent")[0] == 404
    assert call(server.port, "PUT", "   ", b"v")[0] == 400  # blank key
    assert call(server.port, "PUT", "x_rpc_meta", b"one")[0] == 200
    assert call(server.port, "PUT", "x_rpc_meta", b"two")[0] == 400  # claimed by another
    assert call(server.port, "GET", "x_rpc_meta") == (200, b"one")
    assert call(server.port, "DELETE", "a/b")[0] == 200
    assert call(server.port, "DELETE", "a/b")[0] == 404


def test_close_stops_it_and_a_taken_port_is_an_error(server):
    port = server.port
    with pytest.raises(RuntimeError, match="did not start"):
        KVBootstrapServer(port=port, host="127.0.0.1").run()
    assert server.poll() == KVPoll.Success  # the first one is untouched
    server.close()
    assert server.poll() == KVPoll.Failed
    server.close()  # idempotent
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        KVBootstrapServer(port=70000)
    with pytest.raises(ValueError):
        KVBootstrapServer(port=0, host="")


def test_parse_args_reads_upstreams_command_line():
    from mooncake.http_metadata_server import parse_args
    args = parse_args(["--port", "9090", "--host=127.0.0.1", "--log-level", "DEBUG"])
    assert (args.port, args.host, args.log_level) == (9090, "127.0.0.1", "DEBUG")
    assert (parse_args([]).port, parse_args([]).host, parse_args([]).log_level) == (
        8080, "0.0.0.0", "INFO")


def test_a_transfer_engine_uses_it_as_its_metadata_server(server):
    import numpy as np
    from mooncake.engine import TransferEngine

    metadata = f"http://127.0.0.1:{server.port}/metadata"
    target, initiator = TransferEngine(), TransferEngine()
    assert target.initialize("127.0.0.1", metadata, "tcp", "") == 0
    assert initiator.initialize("127.0.0.1", metadata, "tcp", "") == 0
    source = np.arange(4096, dtype=np.uint8) % 251
    dest = np.zeros(4096, dtype=np.uint8)
    assert target.register_memory(dest.ctypes.data, dest.nbytes) == 0
    assert initiator.register_memory(source.ctypes.data, source.nbytes) == 0
    assert initiator.transfer_sync_write(target.get_session_id(), source.ctypes.data,
                                         dest.ctypes.data, source.nbytes) == 0
    assert np.array_equal(source, dest)
