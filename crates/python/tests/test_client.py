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


@pytest.fixture
def node(tmp_path):
    if not SIFT.exists():
        if os.environ.get("SIFT_REQUIRE_SERVER"):
            pytest.fail(f"{SIFT} is missing")
        pytest.skip(f"{SIFT} is missing: cargo build --release --bin sift")
    addr = f"127.0.0.1:{free_port()}"
    server = subprocess.Popen(
        [SIFT, "serve", "--id", "1", "--listen", addr, "--db", tmp_path / "n1",
         "--heartbeat-ms", "100"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            init = subprocess.run(
                [SIFT, "--server", addr, "cluster", "init", "--members", f"1={addr}"],
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
