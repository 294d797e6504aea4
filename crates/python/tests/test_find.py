"""Search by value: indexes, limits, explain, methods."""

import json

import pytest

import siftdb


def load(db, n=3000):
    with db.write_batch() as batch:
        for i in range(n):
            color = "ultraviolet" if i % 1000 == 7 else ["red", "green", "blue"][i % 3]
            batch[f"k{i:05}"] = json.dumps({"id": i, "color": color})


def test_find_yields_matching_records_in_key_order_lazily_with_a_limit(small_tables):
    db = small_tables
    load(db)
    db.add_index("color", field="color")
    expected = [(f"k{i:05}".encode(), json.dumps({"id": i, "color": "ultraviolet"}).encode())
                for i in (7, 1007, 2007)]
    found = db.find("color", "ultraviolet")
    assert list(found) == expected
    stats = found.explain()
    assert stats["results"] == 3
    assert stats["method"] in {"scan", "bloom-scan", "hierarchy", "flat"}
    assert list(db.find("color", b"ultraviolet", limit=2)) == expected[:2]
    assert list(db.find("color", "absent")) == []
    # Every method the caller can force gives the same answer.
    for method in ["scan", "bloom-scan", "hierarchy", "flat", "auto"]:
        assert list(db.find("color", "ultraviolet", method=method)) == expected


def test_find_with_a_small_limit_reads_few_blocks_of_a_common_value(small_tables):
    db = small_tables
    load(db)
    db.compact()
    db.add_index("color", field="/color")
    everything = db.find("color", "red")
    reds = sum(1 for i in range(3000) if i % 3 == 0 and i % 1000 != 7)
    assert len(list(everything)) == reds
    few = db.find("color", "red", limit=5)
    assert len(list(few)) == 5
    assert few.explain()["blocks_read"] < everything.explain()["blocks_read"]


def test_indexes_over_columns_and_whole_values_and_their_listing(db):
    db["a"] = "x,red,1"
    db["b"] = "y,blue,2"
    db.add_index("col", column=1)
    db.add_index("whole")
    assert list(db.find("col", "blue")) == [(b"b", b"y,blue,2")]
    assert list(db.find("whole", "x,red,1")) == [(b"a", b"x,red,1")]
    names = [index["name"] for index in db.indexes()]
    assert names == ["col", "whole"]
    db.drop_index("whole")
    assert [index["name"] for index in db.indexes()] == ["col"]
    with pytest.raises(siftdb.InvalidArgumentError):
        db.find("whole", "x")


def test_a_snapshot_finds_as_of_its_moment(db):
    db["a"] = json.dumps({"color": "red"})
    db.add_index("color", field="color")
    snapshot = db.snapshot()
    db["b"] = json.dumps({"color": "red"})
    assert [k for k, _ in snapshot.find("color", "red")] == [b"a"]
    assert [k for k, _ in db.find("color", "red")] == [b"a", b"b"]


def test_bad_index_arguments_are_invalid(db):
    with pytest.raises(siftdb.InvalidArgumentError):
        db.add_index("x", field="a", column=1)
    with pytest.raises(siftdb.InvalidArgumentError):
        db.add_index("x", column=1, separator=";;")
    db.add_index("x", field="a")
    with pytest.raises(siftdb.InvalidArgumentError):
        db.find("x", "v", method="telepathy")
    with pytest.raises(siftdb.InvalidArgumentError):
        db.find("nope", "v")


def test_fresh_writes_are_found_through_the_memtable_postings(tmp_path):
    with siftdb.Db(tmp_path / "fresh") as db:
        db["before"] = json.dumps({"id": -1, "color": "c7"})
        db.add_index("color", field="/color")
        # The memtable that was active when the index arrived has no
        # postings of it (a search reads it whole); the next one does.
        db.flush()
        with db.write_batch() as batch:
            for i in range(2000):
                batch[f"k{i:05}"] = json.dumps({"id": i, "color": f"c{i % 400}"})
        found = db.find("color", "c7")
        expected = [b"before"] + [f"k{i:05}".encode() for i in range(7, 2000, 400)]
        assert [key for key, _ in found] == expected
        stats = found.explain()
        assert stats["memtable_postings_read"] == 5
        assert stats["memtable_entries_scanned"] == 0
