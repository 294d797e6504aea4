"""Sift: an embedded LSM-tree key-value store, from Python.

Keys and values are ``bytes`` (``str`` is accepted and stored as UTF-8)::

    import siftdb

    with siftdb.Db("/tmp/sift-example") as db:
        db[b"fruit:apple"] = b'{"color": "red"}'
        db.add_index("color", field="color")
        for key, value in db.find("color", "red", limit=10):
            print(key, value)

See the README's Python section, and docs/architecture.md for how it is built.
"""

import random
import time

from ._native import (
    BackgroundError,
    ClosedError,
    Client,
    ConflictError,
    CorruptionError,
    Db,
    EntryIterator,
    InvalidArgumentError,
    LockedError,
    NodeFailedError,
    OutcomeUnknownError,
    ReadOnlyError,
    SiftError,
    SiftIOError,
    Snapshot,
    Transaction,
    UnauthorizedError,
    UnavailableError,
    WriteBatch,
    verify,
)

__all__ = [
    "BackgroundError",
    "ClosedError",
    "Client",
    "ConflictError",
    "CorruptionError",
    "Db",
    "EntryIterator",
    "InvalidArgumentError",
    "LockedError",
    "NodeFailedError",
    "OutcomeUnknownError",
    "ReadOnlyError",
    "SiftError",
    "SiftIOError",
    "Snapshot",
    "Transaction",
    "UnauthorizedError",
    "UnavailableError",
    "WriteBatch",
    "run_transaction",
    "verify",
]


def run_transaction(db, work, *, attempts=10, backoff=0.001):
    """Runs ``work(txn)`` in a transaction of ``db`` and commits it,
    running it again on a ``ConflictError``, up to ``attempts`` times.

    Returns what ``work`` returned. Between attempts it sleeps a random time
    that doubles each time from ``backoff`` seconds, so that transactions
    that keep conflicting spread out. ``work`` may run more than once, so it
    should do nothing but read and write through ``txn``. The last
    ``ConflictError`` is raised when every attempt conflicted; any other
    exception rolls the transaction back and propagates at once.
    """
    if attempts < 1:
        raise InvalidArgumentError(f"attempts {attempts}: must be at least 1")
    for attempt in range(attempts):
        txn = db.transaction()
        try:
            result = work(txn)
            txn.commit()
            return result
        except ConflictError:
            if attempt + 1 == attempts:
                raise
        except BaseException:
            txn.rollback()
            raise
        time.sleep(random.uniform(0, backoff * (2**attempt)))
    raise AssertionError("unreachable")
