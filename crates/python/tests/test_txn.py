"""Transactions: their own writes, conflicts, the retry helper."""

import threading

import pytest

import siftdb


def test_a_transaction_reads_its_own_writes_and_commits_them(db):
    db["a"] = "1"
    txn = db.transaction()
    assert txn["a"] == b"1"
    txn["a"] = "2"
    txn.put("b", "3")
    del txn["a"]
    txn["c"] = "4"
    assert "a" not in txn and txn.get("a") is None
    assert txn.get("b") == b"3"
    assert txn.items() == [(b"b", b"3"), (b"c", b"4")]
    assert txn.items(prefix="c") == [(b"c", b"4")]
    assert db["a"] == b"1"  # nothing is applied before the commit
    assert isinstance(txn.commit(), int)
    assert "a" not in db and db["b"] == b"3"


def test_a_conflicting_commit_raises_conflict_error_and_applies_nothing(db):
    db["counter"] = "0"
    first = db.transaction()
    second = db.transaction()
    first["counter"] = str(int(first["counter"]) + 1)
    second["counter"] = str(int(second["counter"]) + 1)
    second["other"] = "x"
    first.commit()
    with pytest.raises(siftdb.ConflictError) as error:
        second.commit()
    assert error.value.key == b"counter"
    assert isinstance(error.value, siftdb.SiftError)
    assert db["counter"] == b"1" and "other" not in db


def test_a_finished_transaction_refuses_more_work(db):
    txn = db.transaction()
    txn["a"] = "1"
    txn.rollback()
    assert "a" not in db
    with pytest.raises(siftdb.InvalidArgumentError):
        txn["b"] = "2"
    with pytest.raises(siftdb.InvalidArgumentError):
        txn.commit()


def test_as_a_context_manager_it_commits_or_rolls_back(db):
    with db.transaction() as txn:
        txn["a"] = "1"
    assert db["a"] == b"1"
    with pytest.raises(ValueError):
        with db.transaction() as txn:
            txn["b"] = "2"
            raise ValueError("abandon")
    assert "b" not in db


def test_run_transaction_retries_conflicts_until_every_increment_lands(db):
    db["counter"] = "0"

    def increment(txn):
        value = int(txn["counter"]) + 1
        txn["counter"] = str(value)
        return value

    def worker():
        for _ in range(25):
            siftdb.run_transaction(db, increment, attempts=1000)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert db["counter"] == b"100"


def test_run_transaction_gives_up_after_its_attempts_and_propagates_other_errors(db):
    db["k"] = "0"

    def always_conflicts(txn):
        txn["k"] = txn["k"] + b"+"
        db["k"] = "changed"  # a commit after the transaction's snapshot

    with pytest.raises(siftdb.ConflictError):
        siftdb.run_transaction(db, always_conflicts, attempts=3)

    def fails(txn):
        txn["written"] = "x"
        raise KeyError("boom")

    with pytest.raises(KeyError):
        siftdb.run_transaction(db, fails)
    assert "written" not in db
    with pytest.raises(siftdb.InvalidArgumentError):
        siftdb.run_transaction(db, fails, attempts=0)
