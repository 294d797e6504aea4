"""Threads sharing one Db: each writer's keys are all there with their last
value, readers never see a value that was not written, and a scan runs
while writers go on (the GIL is released during reads and writes)."""

import threading

import siftdb


def test_threads_share_one_db(small_tables):
    db = small_tables
    writers, per_writer = 4, 1500
    errors = []
    stop = threading.Event()

    def write(w):
        try:
            for i in range(per_writer):
                db[f"w{w}-{i:05}"] = f"{w}:{i}"
                if i % 100 == 0:
                    with db.write_batch() as batch:
                        batch[f"w{w}-batch"] = str(i)
        except Exception as error:  # reported below
            errors.append(error)

    def read():
        try:
            while not stop.is_set():
                for key, value in db.items(prefix="w1-0"):
                    w, i = value.decode().split(":")
                    assert key == f"w{w}-{int(i):05}".encode()
                value = db.get("w2-00000")
                assert value in (None, b"2:0")
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    readers = [threading.Thread(target=read) for _ in range(2)]
    for thread in threads + readers:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    for thread in readers:
        thread.join()
    assert not errors, errors
    for w in range(writers):
        keys = list(db.keys(prefix=f"w{w}-0"))
        assert len(keys) == per_writer
        assert db[f"w{w}-batch"] == b"1400"


def test_one_iterator_used_by_two_threads_yields_each_entry_once(db):
    for i in range(5000):
        db[f"k{i:05}"] = "v"
    iterator = db.keys()
    seen = [[], []]

    def drain(mine):
        for key in iterator:
            mine.append(key)

    threads = [threading.Thread(target=drain, args=(s,)) for s in seen]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(seen[0] + seen[1]) == [f"k{i:05}".encode() for i in range(5000)]


def test_close_while_other_threads_read_ends_their_calls_with_closed_error(tmp_path):
    db = siftdb.Db(tmp_path / "db")
    for i in range(1000):
        db[f"k{i:04}"] = "v"
    outcomes = []

    def read():
        try:
            while True:
                db.get("k0001")
        except siftdb.ClosedError:
            outcomes.append("closed")

    threads = [threading.Thread(target=read) for _ in range(3)]
    for thread in threads:
        thread.start()
    db.close()
    for thread in threads:
        thread.join()
    assert outcomes == ["closed"] * 3
