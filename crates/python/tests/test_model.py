"""The database against a Python dict: random puts, deletes, batches and
transactions, with reopens (a clean close) between them; every read, scan
and snapshot must agree with the model."""

import shutil
import tempfile

from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

import siftdb

keys = st.binary(min_size=0, max_size=6) | st.text(max_size=4)
values = st.binary(max_size=40)


def raw(key):
    return key.encode() if isinstance(key, str) else key


class DictModel(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = tempfile.mkdtemp()
        self.options = dict(memtable_bytes=4096, table_target_bytes=4096, block_bytes=512)
        self.db = siftdb.Db(self.dir, **self.options)
        self.model = {}

    def teardown(self):
        self.db.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(key=keys, value=values)
    def put(self, key, value):
        self.db[key] = value
        self.model[raw(key)] = value

    @rule(key=keys)
    def delete(self, key):
        del self.db[key]
        self.model.pop(raw(key), None)

    @rule(writes=st.lists(st.tuples(keys, st.none() | values), max_size=8))
    def batch(self, writes):
        with self.db.write_batch() as batch:
            for key, value in writes:
                if value is None:
                    del batch[key]
                else:
                    batch[key] = value
        for key, value in writes:
            if value is None:
                self.model.pop(raw(key), None)
            else:
                self.model[raw(key)] = value

    @rule(writes=st.lists(st.tuples(keys, values), max_size=4), abort=st.booleans())
    def transaction(self, writes, abort):
        txn = self.db.transaction()
        for key, value in writes:
            txn[key] = value
        if abort:
            txn.rollback()
            return
        txn.commit()
        for key, value in writes:
            self.model[raw(key)] = value

    @rule()
    def reopen(self):
        self.db.close()
        self.db = siftdb.Db(self.dir, **self.options)

    @rule()
    def flush(self):
        self.db.flush()

    @rule(key=keys)
    def get(self, key):
        assert self.db.get(key) == self.model.get(raw(key))
        assert (key in self.db) == (raw(key) in self.model)

    @rule(start=keys, stop=keys, reverse=st.booleans())
    def scan(self, start, stop, reverse):
        lo, hi = raw(start), raw(stop)
        expected = sorted((k, v) for k, v in self.model.items() if lo <= k < hi)
        if reverse:
            expected.reverse()
        assert list(self.db.items(start, stop, reverse=reverse)) == expected

    @rule(prefix=keys)
    def prefix(self, prefix):
        p = raw(prefix)
        expected = sorted(k for k in self.model if k.startswith(p))
        assert list(self.db.keys(prefix=prefix)) == expected

    @rule(key=keys, value=values)
    def snapshot_ignores_later_writes(self, key, value):
        snapshot = self.db.snapshot()
        before = dict(self.model)
        self.put(key, value)
        assert dict(snapshot.items()) == before

    @invariant()
    def everything_matches(self):
        assert dict(self.db.items()) == self.model


DictModel.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
TestDictModel = DictModel.TestCase
