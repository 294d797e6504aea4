"""Open modes: `read_only=True` (changes nothing, takes no lock) and
`create_if_missing=False` (refuses a directory without a database)."""

import os

import pytest

import siftdb


def test_read_only_reads_a_database_another_handle_holds(tmp_path):
    path = tmp_path / "db"
    with siftdb.Db(path) as writer:
        writer["a"] = "1"
        with siftdb.Db(path, read_only=True) as reader:
            assert reader.read_only and not writer.read_only
            assert reader["a"] == b"1"
            assert list(reader.items()) == [(b"a", b"1")]
            assert reader.snapshot()["a"] == b"1"
        writer["b"] = "2"  # the writer is unaffected


def test_read_only_refuses_every_change_with_read_only_error(tmp_path):
    path = tmp_path / "db"
    with siftdb.Db(path) as db:
        db["a"] = "1"
    with siftdb.Db(path, read_only=True) as db:
        batch = db.write_batch()
        batch["b"] = "2"
        txn = db.transaction()
        txn["b"] = "2"
        for call in [
            lambda: db.put("b", "2"), lambda: db.__setitem__("b", "2"),
            lambda: db.delete("a"), lambda: db.__delitem__("a"), db.flush,
            db.compact, lambda: db.add_index("whole"), batch.commit, txn.commit,
            lambda: db.checkpoint(tmp_path / "copy"),
        ]:
            with pytest.raises(siftdb.ReadOnlyError) as error:
                call()
            assert error.value.path == str(path)
        assert db["a"] == b"1" and "b" not in db


def test_read_only_changes_nothing_in_the_directory(tmp_path):
    path = tmp_path / "db"
    with siftdb.Db(path) as db:
        db["a"] = "1"
    before = {name: os.stat(path / name).st_mtime_ns for name in os.listdir(path)}
    with siftdb.Db(path, read_only=True) as db:
        assert db["a"] == b"1"
    after = {name: os.stat(path / name).st_mtime_ns for name in os.listdir(path)}
    assert after == before


def test_read_only_and_create_if_missing_false_refuse_a_missing_database(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    for options in [{"read_only": True}, {"create_if_missing": False}]:
        for path in [tmp_path / "missing", empty]:
            with pytest.raises(siftdb.InvalidArgumentError, match="no database"):
                siftdb.Db(path, **options)
    assert not (tmp_path / "missing").exists()
    assert os.listdir(empty) == []


def test_create_if_missing_false_opens_an_existing_database_for_writing(tmp_path):
    path = tmp_path / "db"
    siftdb.Db(path).close()
    with siftdb.Db(path, create_if_missing=False) as db:
        db["a"] = "1"
        assert db["a"] == b"1" and not db.read_only


def test_read_only_cannot_create(tmp_path):
    with pytest.raises(siftdb.InvalidArgumentError, match="read-only"):
        siftdb.Db(tmp_path / "db", read_only=True, create_if_missing=True)
