import pytest

import siftdb


@pytest.fixture
def db(tmp_path):
    with siftdb.Db(tmp_path / "db") as handle:
        yield handle


@pytest.fixture
def small_tables(tmp_path):
    """A database with tiny memtables and tables, so a few thousand writes
    reach several tables and levels."""
    with siftdb.Db(
        tmp_path / "small",
        memtable_bytes=16 << 10,
        table_target_bytes=16 << 10,
        block_bytes=1024,
    ) as handle:
        yield handle
