"""The cluster client against a one-node cluster run by `sift serve`.

Needs the `sift` binary: $SIFT_BIN, else target/release/sift of this
repository. Without it the test is skipped, unless $SIFT_REQUIRE_SERVER is
set (CI sets it, having built the binary)."""

import json
import os
import pathlib
import socket
import subprocess
import time

import pytest

import siftdb

ROOT = pathlib.Path(__file__).resolve().parents[3]
SIFT = pathlib.Path(os.environ.get("SIFT_BIN", ROOT / "target" / "release" / "sift"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(tmp_path, *extra):
    """A one-node cluster, formed; yields its address."""
    if not SIFT.exists():
        if os.environ.get("SIFT_REQUIRE_SERVER"):
            pytest.fail(f"{SIFT} is missing")
        pytest.skip(f"{SIFT} is missing: cargo build --release --bin sift")
    addr = f"127.0.0.1:{free_port()}"
    server = subprocess.Popen(
        [SIFT, "serve", "--id", "1", "--listen", addr, "--db", tmp_path / "n1",
         "--heartbeat-ms", "100", *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            init = subprocess.run(
                [SIFT, "--server", addr, *extra, "cluster", "init", "--members", f"1={addr}"],
                capture_output=True,
            )
            if init.returncode == 0:
                break
            assert time.monotonic() < deadline, init.stderr
            time.sleep(0.1)
        yield addr
    finally:
        server.terminate()
        server.wait()


@pytest.fixture
def node(tmp_path):
    yield from serve(tmp_path)


TOKEN = "s3cret-token"


@pytest.fixture
def guarded_node(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    yield from serve(tmp_path, "--token-file", str(token_file))


def test_the_client_writes_reads_scans_and_finds_through_the_cluster(node):
    down = f"127.0.0.1:{free_port()}"
    # The first seed is down: requests move on to the next.
    client = siftdb.Client([down, node], retry_for=30)
    client.put("a", json.dumps({"color": "red"}))
    client.put(b"b", json.dumps({"color": "blue"}))
    client.put("c", json.dumps({"color": "red"}))
    assert client.get("a") == b'{"color": "red"}'
    assert client.get("zz") is None
    assert client.get("zz", b"default") == b"default"
    client.delete("b")
    assert client.get("b") is None
    assert [k for k, _ in client.scan()] == [b"a", b"c"]
    assert [k for k, _ in client.scan("b", limit=10)] == [b"c"]
    assert client.scan("a", "c") == [(b"a", b'{"color": "red"}')]
    client.add_index("color", "/color")
    assert [k for k, _ in client.find("color", "red")] == [b"a", b"c"]
    assert [k for k, _ in client.find("color", "red", limit=1)] == [b"a"]
    with pytest.raises(siftdb.InvalidArgumentError):
        client.find("no-such-index", "x")


def test_a_cluster_that_cannot_be_reached_is_unavailable():
    down = f"127.0.0.1:{free_port()}"
    client = siftdb.Client(down, retry_for=0.3)
    with pytest.raises(siftdb.UnavailableError):
        client.put("a", "1")
    with pytest.raises(siftdb.UnavailableError):
        client.get("a")
    with pytest.raises(siftdb.InvalidArgumentError):
        siftdb.Client([])


def test_a_cluster_with_a_token_serves_only_clients_that_send_it(guarded_node):
    client = siftdb.Client(guarded_node, retry_for=10, token=TOKEN)
    client.put("a", "1")
    assert client.get("a") == b"1"
    started = time.monotonic()
    for refused in (siftdb.Client(guarded_node, retry_for=10),
                    siftdb.Client(guarded_node, retry_for=10, token="guess")):
        with pytest.raises(siftdb.UnauthorizedError):
            refused.put("a", "2")
        with pytest.raises(siftdb.UnauthorizedError):
            refused.get("a")
    # Told at once, not retried for 10 s.
    assert time.monotonic() - started < 5
    assert client.get("a") == b"1"
    with pytest.raises(siftdb.InvalidArgumentError):
        siftdb.Client(guarded_node, token=" ")
