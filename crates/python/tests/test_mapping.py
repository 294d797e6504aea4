"""The mapping API: items, iteration, batches, snapshots, bytes and str."""

import itertools

import pytest

import siftdb


def test_set_get_contains_delete_with_bytes_and_str(db):
    db[b"a"] = b"1"
    db["b"] = "2"
    db[bytearray(b"c")] = bytearray(b"3")
    assert db[b"a"] == b"1"
    assert db["a"] == b"1"
    assert db[b"b"] == b"2"
    assert db["c"] == b"3"
    assert "a" in db and b"b" in db
    assert "zz" not in db
    assert db.get("zz") is None
    assert db.get("zz", b"default") == b"default"
    assert db.get("a", b"default") == b"1"
    del db["a"]
    assert "a" not in db
    with pytest.raises(KeyError) as error:
        db["a"]
    assert error.value.args[0] == "a"
    # Deleting an absent key is not an error (it would cost a read to know).
    del db["never-there"]
    db.put("d", "4", sync=True)
    db.delete("d", sync=True)
    assert db.get("d") is None


def test_unicode_keys_are_stored_as_utf8(db):
    db["clé"] = "valeur ✓"
    assert db["clé".encode()] == "valeur ✓".encode()
    assert list(db.keys()) == ["clé".encode()]


def test_keys_and_values_of_other_types_are_type_errors(db):
    with pytest.raises(TypeError):
        db[1] = b"x"
    with pytest.raises(TypeError):
        db[b"x"] = 1.5
    with pytest.raises(TypeError):
        db.get(None)
    with pytest.raises(TypeError):
        db[memoryview(b"x")] = b"y"


def test_items_keys_values_with_bounds_prefix_and_reverse(db):
    for key in ["a1", "a2", "a3", "b1", "b2", "c1"]:
        db[key] = key.upper()
    assert list(db.keys()) == [b"a1", b"a2", b"a3", b"b1", b"b2", b"c1"]
    assert list(db) == list(db.keys())
    assert list(db.items(prefix="b")) == [(b"b1", b"B1"), (b"b2", b"B2")]
    assert list(db.values(start="a2", stop="b2")) == [b"A2", b"A3", b"B1"]
    assert list(db.keys(start="a2", stop="b2", reverse=True)) == [b"b1", b"a3", b"a2"]
    assert list(db.keys(prefix="a", start="a2")) == [b"a2", b"a3"]
    assert list(db.keys(prefix="a", stop="a3")) == [b"a1", b"a2"]
    assert list(db.keys(prefix="a", start="b")) == []
    assert list(db.keys(prefix="z")) == []
    assert list(db.keys(reverse=True)) == [b"c1", b"b2", b"b1", b"a3", b"a2", b"a1"]


def test_a_prefix_of_ff_bytes_reaches_the_end_of_the_key_space(db):
    db[b"\xff\xff"] = b"x"
    db[b"\xff\xff\x00"] = b"y"
    db[b"\xfe"] = b"z"
    assert list(db.keys(prefix=b"\xff\xff")) == [b"\xff\xff", b"\xff\xff\x00"]
    assert list(db.keys(prefix=b"\xff", start=b"\xff\xff\x00")) == [b"\xff\xff\x00"]


def test_an_iterator_reads_as_of_its_creation_while_writes_go_on(small_tables):
    db = small_tables
    for i in range(2000):
        db[f"k{i:05}"] = f"v{i}"
    seen = []
    for n, (key, value) in enumerate(db.items()):
        seen.append(key)
        # Writes during iteration: new keys, overwrites and deletes, some
        # ahead of the iterator. None of them shows in it.
        db[f"k{n:05}x"] = b"new"
        db[f"k{(n + 500) % 2000:05}"] = b"overwritten"
        del db[f"k{(n + 700) % 2000:05}"]
        assert value == f"v{int(key[1:])}".encode()
    assert seen == [f"k{i:05}".encode() for i in range(2000)]
    assert db["k00000x"] == b"new"


def test_iterators_are_lazy_and_stop_early(small_tables):
    db = small_tables
    for i in range(3000):
        db[f"k{i:05}"] = "x" * 50
    first = list(itertools.islice(db.items(start="k01000"), 3))
    assert [k for k, _ in first] == [b"k01000", b"k01001", b"k01002"]
    iterator = db.keys()
    assert next(iterator) == b"k00000"
    assert iter(iterator) is iterator
    assert iterator.explain() is None


def test_multi_get_returns_values_in_order_with_none_for_absent(db):
    db["a"] = "1"
    db["c"] = "3"
    assert db.multi_get(["a", b"b", "c"]) == [b"1", None, b"3"]
    assert db.multi_get([]) == []
    assert db.multi_get(k for k in ["c", "a"]) == [b"3", b"1"]


def test_a_snapshot_reads_as_of_its_moment(db):
    db["a"] = "1"
    db["b"] = "2"
    snapshot = db.snapshot()
    db["a"] = "changed"
    del db["b"]
    db["c"] = "3"
    assert snapshot["a"] == b"1"
    assert snapshot.get("b") == b"2"
    assert "c" not in snapshot
    assert snapshot.get("c", b"none") == b"none"
    with pytest.raises(KeyError):
        snapshot["c"]
    assert list(snapshot.items()) == [(b"a", b"1"), (b"b", b"2")]
    assert list(snapshot.keys(reverse=True)) == [b"b", b"a"]
    assert list(snapshot.values(prefix="a")) == [b"1"]
    assert list(snapshot) == [b"a", b"b"]
    assert isinstance(snapshot.seq, int)
    assert db["a"] == b"changed"


def test_a_write_batch_applies_on_exit_and_is_dropped_on_an_exception(db):
    db["gone"] = "x"
    with db.write_batch() as batch:
        batch["a"] = "1"
        batch.put("b", "2")
        del batch["gone"]
        assert len(batch) == 3
        assert "a" not in db  # nothing is applied before the end
    assert db["a"] == b"1" and db["b"] == b"2" and "gone" not in db

    with pytest.raises(RuntimeError):
        with db.write_batch() as batch:
            batch["c"] = "3"
            raise RuntimeError("abandon")
    assert "c" not in db

    batch = db.write_batch(sync=True)
    batch["d"] = "4"
    batch.delete("a")
    batch.commit()
    assert len(batch) == 0
    assert db["d"] == b"4" and "a" not in db
    batch["e"] = "5"
    batch.clear()
    batch.commit()
    assert "e" not in db


def test_keys_and_values_too_large_are_refused_and_nothing_of_the_batch_is_applied(db):
    key_too_long = b"k" * ((64 << 10) + 1)
    with pytest.raises(siftdb.InvalidArgumentError):
        db[key_too_long] = b"v"
    with pytest.raises(siftdb.InvalidArgumentError):
        db[b"k"] = b"v" * ((64 << 20) + 1)
    with pytest.raises(siftdb.InvalidArgumentError):
        with db.write_batch() as batch:
            batch["fine"] = "1"
            batch[key_too_long] = "2"
    assert "fine" not in db
    assert list(db) == []
