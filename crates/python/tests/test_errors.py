"""Errors: closed and locked databases, damaged files, bad options; and the
maintenance calls (stats, verify, checkpoint, compact)."""

import errno
import glob
import os

import pytest

import siftdb


def flip(path, at):
    with open(path, "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0x41]))


def test_every_error_is_a_sift_error():
    for name in [
        "CorruptionError", "SiftIOError", "InvalidArgumentError", "LockedError",
        "ClosedError", "BackgroundError", "ConflictError", "UnavailableError",
        "OutcomeUnknownError", "NodeFailedError", "ReadOnlyError",
    ]:
        assert issubclass(getattr(siftdb, name), siftdb.SiftError), name


def test_a_closed_database_raises_closed_error_everywhere(tmp_path):
    db = siftdb.Db(tmp_path / "db")
    db["a"] = "1"
    batch = db.write_batch()
    batch["b"] = "2"
    db.close()
    db.close()  # closing twice does nothing
    assert db.closed
    assert "closed" in repr(db)
    for call in [
        lambda: db["a"], lambda: db.get("a"), lambda: db.__setitem__("a", "2"),
        lambda: "a" in db, lambda: db.items(), lambda: db.snapshot(),
        lambda: db.transaction(), lambda: db.stats(), lambda: db.find("i", "v"),
        lambda: db.multi_get(["a"]), batch.commit, db.compact, db.verify,
    ]:
        with pytest.raises(siftdb.ClosedError):
            call()
    # The acknowledged write is there after reopening.
    with siftdb.Db(tmp_path / "db") as again:
        assert again["a"] == b"1" and "b" not in again


def test_a_second_handle_on_an_open_database_is_locked(tmp_path):
    with siftdb.Db(tmp_path / "db"):
        with pytest.raises(siftdb.LockedError) as error:
            siftdb.Db(tmp_path / "db")
        assert error.value.path == str(tmp_path / "db")
        with pytest.raises(siftdb.LockedError):
            siftdb.verify(tmp_path / "db")
    # Released by close.
    siftdb.Db(tmp_path / "db").close()


def test_a_damaged_table_is_a_corruption_error_naming_the_file_and_offset(tmp_path):
    path = tmp_path / "db"
    with siftdb.Db(path) as db:
        for i in range(2000):
            db[f"k{i:05}"] = "v" * 40
        db.compact()
    [table] = glob.glob(str(path / "*.sst"))
    flip(table, 100)  # inside the first data block

    report = siftdb.verify(path)
    assert not report["clean"]
    [problem] = report["problems"]
    assert problem["path"] == table and problem["offset"] is not None

    with siftdb.Db(path) as db:
        with pytest.raises(siftdb.CorruptionError) as error:
            db["k00000"]
        assert error.value.path == table
        assert isinstance(error.value.offset, int)
        assert table in str(error.value)
        with pytest.raises(siftdb.CorruptionError):
            list(db.items())
        # Keys in blocks that are intact still read.
        assert db["k01999"] == b"v" * 40
        report = db.verify()
        assert [p["path"] for p in report["problems"]] == [table]


def test_a_directory_that_cannot_be_created_is_an_io_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_bytes(b"not a directory")
    with pytest.raises(siftdb.SiftIOError) as error:
        siftdb.Db(blocker / "db")
    assert error.value.path
    # An OSError too, with what the operating system reported.
    assert isinstance(error.value, OSError)
    assert error.value.errno in (errno.ENOTDIR, errno.EEXIST)
    assert error.value.filename == error.value.path
    assert str(error.value).startswith(f"[Errno {error.value.errno}]")


def test_sift_io_error_is_an_os_error():
    assert issubclass(siftdb.SiftIOError, OSError)
    assert issubclass(siftdb.SiftIOError, siftdb.SiftError)


def test_bad_options_are_refused(tmp_path):
    with pytest.raises(siftdb.InvalidArgumentError):
        siftdb.Db(tmp_path / "a", compression="zstd")
    with pytest.raises(TypeError):
        siftdb.Db(tmp_path / "b", no_such_option=1)
    with pytest.raises(TypeError):
        siftdb.Db(tmp_path / "c", memtable_bytes="big")
    with pytest.raises(siftdb.InvalidArgumentError):
        siftdb.verify(tmp_path)  # not a database


def test_options_open_a_working_database(tmp_path):
    with siftdb.Db(
        tmp_path / "db", memtable_bytes=1 << 20, block_cache_bytes=8 << 20,
        filter_memory_bytes=4 << 20, table_target_bytes=1 << 20, block_bytes=4096,
        max_open_files=64, sync_writes=True, compression="lz4",
        background_threads=True, compaction_threads=2,
    ) as db:
        db["a"] = "1"
        assert db["a"] == b"1"
        assert db.stats()["filter_memory_budget"] == 4 << 20


def test_direct_reads_read_what_was_written(tmp_path):
    # tmp_path is on a file system with O_DIRECT here (ext4); one without
    # it refuses the open with an error that says so.
    try:
        db = siftdb.Db(tmp_path / "db", direct_reads=True, table_target_bytes=64 << 10)
    except siftdb.SiftIOError as e:
        assert "direct reads" in str(e)
        return
    with db:
        for i in range(5000):
            db[f"k{i:05}"] = f"v{i}"
        db.flush()
        db.compact()
        assert db[b"k01234"] == b"v1234"
        assert db.get(b"k01234x") is None
        levels = db.stats()["levels"]
        assert sum(level["metadata_bytes"] for level in levels) > 0


def test_stats_checkpoint_compact_flush_and_verify(tmp_path, small_tables):
    db = small_tables
    for i in range(3000):
        db[f"k{i:05}"] = "v" * 30
    assert db["k00001"] == b"v" * 30
    db["absent-probe"] = "x"
    db.flush()
    db.compact()
    stats = db.stats()
    assert stats["gets"] >= 1 and stats["writes"] >= 3000
    assert sum(level["tables"] for level in stats["levels"]) >= 1
    assert stats["filter_memory_resident"] <= stats["filter_memory_budget"]
    report = db.verify()
    assert report["clean"] and report["tables"] >= 1 and report["problems"] == []
    assert not [n for n in os.listdir(db.path) if n.startswith("verify-")]

    copy = tmp_path / "copy"
    db.checkpoint(copy)
    db["after"] = "x"
    with siftdb.Db(copy) as restored:
        assert restored["k02999"] == b"v" * 30
        assert "after" not in restored
    with pytest.raises(siftdb.InvalidArgumentError):
        db.checkpoint(copy)  # already holds a database


@pytest.mark.parametrize("option", [
    "memtable_bytes", "block_cache_bytes", "filter_memory_bytes", "table_target_bytes",
    "block_bytes", "max_open_files", "compaction_threads",
])
def test_a_negative_or_huge_size_is_an_invalid_argument(tmp_path, option):
    for value in [-1, 1 << 64]:
        with pytest.raises(siftdb.InvalidArgumentError, match=option):
            siftdb.Db(tmp_path / "db", **{option: value})
    assert not (tmp_path / "db").exists()


def test_multi_get_refuses_a_single_key(db):
    db["s"] = "1"
    for keys in ["sb", b"sb", bytearray(b"sb")]:
        with pytest.raises(TypeError, match="multi_get"):
            db.multi_get(keys)
    assert db.multi_get(["s", b"b"]) == [b"1", None]
    assert db.multi_get(k for k in ("s",)) == [b"1"]


def test_add_index_refuses_a_dotted_field(db):
    db["r"] = '{"nested": {"x": "1"}, "a.b": "2"}'
    with pytest.raises(siftdb.InvalidArgumentError, match="/nested/x"):
        db.add_index("dotted", field="nested.x")
    assert db.indexes() == []
    # The JSON Pointer says which is meant: a nested field, or a top-level
    # one whose name holds a dot.
    db.add_index("nested", field="/nested/x")
    db.add_index("dot", field="/a.b")
    assert list(db.find("nested", "1")) == [(b"r", db["r"])]
    assert list(db.find("dot", "2")) == [(b"r", db["r"])]
