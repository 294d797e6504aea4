"""`close()` ends the database for real: its lock and files are released
even while snapshots, transactions and iterators made from it are alive,
and those raise `ClosedError` from then on."""

import subprocess
import sys
import threading
import time

import pytest

import siftdb


def opens_elsewhere(path):
    """Whether another process can open the database at `path` now."""
    code = "import siftdb, sys; siftdb.Db(sys.argv[1]).close()"
    return subprocess.run([sys.executable, "-c", code, str(path)]).returncode == 0


def test_close_releases_the_database_while_a_snapshot_lives(tmp_path):
    path = tmp_path / "db"
    with siftdb.Db(path) as db:
        db["a"] = "1"
        snapshot = db.snapshot()
    # The snapshot is still referenced, yet the directory is free.
    siftdb.Db(path).close()
    assert siftdb.verify(path)["clean"]
    assert opens_elsewhere(path)
    assert snapshot.closed
    for call in [
        lambda: snapshot["a"], lambda: snapshot.get("a"), lambda: "a" in snapshot,
        lambda: snapshot.items(), lambda: snapshot.keys(), lambda: snapshot.values(),
        lambda: iter(snapshot), lambda: snapshot.find("i", "v"), lambda: snapshot.seq,
    ]:
        with pytest.raises(siftdb.ClosedError):
            call()


def test_close_releases_the_database_while_a_transaction_lives(tmp_path):
    path = tmp_path / "db"
    db = siftdb.Db(path)
    db["a"] = "1"
    txn = db.transaction()
    txn["b"] = "2"
    assert txn["a"] == b"1"
    db.close()
    siftdb.Db(path).close()
    assert opens_elsewhere(path)
    for call in [
        lambda: txn["a"], lambda: txn.get("a"), lambda: "a" in txn,
        lambda: txn.put("c", "3"), lambda: txn.delete("a"), lambda: txn.items(),
        txn.commit,
    ]:
        with pytest.raises(siftdb.ClosedError):
            call()
    txn.rollback()  # nothing left to roll back: not an error
    with siftdb.Db(path) as again:
        assert again["a"] == b"1" and "b" not in again


def test_close_releases_the_database_while_iterators_live(tmp_path):
    path = tmp_path / "db"
    db = siftdb.Db(path)
    for i in range(100):
        db[f"k{i:03}"] = "v"
    db.add_index("whole")
    scan = db.items()
    assert next(scan) == (b"k000", b"v")  # reads a batch ahead
    keys = db.keys(prefix="k")
    snapshot_scan = db.snapshot().values()
    found = db.find("whole", "v")
    db.close()
    siftdb.Db(path).close()
    assert opens_elsewhere(path)
    for iterator in [scan, keys, snapshot_scan, found]:
        with pytest.raises(siftdb.ClosedError):
            next(iterator)


def test_a_snapshot_closes_on_its_own_and_as_a_context_manager(db):
    db["a"] = "1"
    with db.snapshot() as snapshot:
        db["a"] = "2"
        assert snapshot["a"] == b"1" and not snapshot.closed
        scan = snapshot.items()
    assert snapshot.closed
    with pytest.raises(siftdb.ClosedError):
        snapshot.get("a")
    with pytest.raises(siftdb.ClosedError):
        next(scan)  # the iterators made from it end with it
    other = db.snapshot()
    other.close()
    other.close()  # closing twice does nothing
    with pytest.raises(siftdb.ClosedError):
        other["a"]
    # The database itself stays open.
    assert db["a"] == b"2" and not db.closed


def test_a_closed_database_cannot_be_entered(tmp_path):
    db = siftdb.Db(tmp_path / "db")
    db.close()
    with pytest.raises(siftdb.ClosedError):
        with db:
            pass


def test_close_while_other_threads_read_a_snapshot(tmp_path):
    path = tmp_path / "db"
    db = siftdb.Db(path)
    for i in range(500):
        db[f"k{i:03}"] = "v" * 100
    snapshot = db.snapshot()
    outcomes = []
    started = threading.Barrier(5)
    deadline = time.monotonic() + 20

    def read():
        started.wait()
        try:
            # Bounded, so that a close that ends nothing fails the test
            # instead of hanging it.
            while time.monotonic() < deadline:
                assert snapshot["k007"] == b"v" * 100
                for _ in snapshot.items():
                    pass
            outcomes.append("still open")
        except siftdb.ClosedError:
            outcomes.append("closed")

    threads = [threading.Thread(target=read, daemon=True) for _ in range(4)]
    for thread in threads:
        thread.start()
    started.wait()
    time.sleep(0.05)
    db.close()
    for thread in threads:
        thread.join(timeout=30)
    assert outcomes == ["closed"] * 4
    siftdb.Db(path).close()
