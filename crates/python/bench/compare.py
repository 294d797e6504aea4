"""Sift from Python against rocksdict (RocksDB), plyvel (LevelDB) and lmdb,
in one process, on the same keys and values.

Records: --num keys b"key%013d" of even numbers (16 bytes), loaded in a
shuffled order (seed 1) in write batches of 1,000; values are JSON
documents of about 100 bytes, {"id": i, "color": c, "pad": "..."}, where c
is one of 50 colors, except on 10 records, where it is "ultraviolet".

Every engine gets the same memory for blocks (--cache-mib) and, where it has
one, a Bloom filter of 10 bits per key; no compression; writes unsynced.
After the load each store is compacted where it can be, so reads meet a
steady shape.

Workloads, over lists of keys drawn once (seed 2) and used by every engine:
- get_present: uniform existing keys;
- get_missing: absent keys inside the key range (odd numbers), so only a
  filter can say no without reading a block;
- scan10: a seek to an existing key and the 10 entries from it;
- put: overwrites of uniform existing keys, one per call;
- find_rare: the 10 records whose color is "ultraviolet". Sift searches its
  value index; the others run the scan a Python user would write: every
  value, a bytes test, then json.loads to confirm.

Rounds are interleaved (round, workload, engine), and the median of the
rounds is reported with Sift's ratio to each engine. Every answer is
checked; a wrong one stops the run.
"""

import argparse
import itertools
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata

import siftdb

COLORS = [f"color{c:02d}" for c in range(50)]
RARE = "ultraviolet"
BATCH = 1000


def key(i):
    return b"key%013d" % i


def value(i, rare):
    color = RARE if rare else COLORS[i % len(COLORS)]
    doc = {"id": i, "color": color, "pad": ""}
    pad = 100 - len(json.dumps(doc, separators=(",", ":")))
    doc["pad"] = "x" * max(pad, 0)
    return json.dumps(doc, separators=(",", ":")).encode()


def python_scan(items):
    """The scan a Python user writes to find a value without an index."""
    needle = RARE.encode()
    found = []
    for k, v in items:
        if needle in v and json.loads(v)["color"] == RARE:
            found.append(k)
    return found


class Sift:
    name = "sift"

    def __init__(self, path, cache):
        self.options = dict(block_cache_bytes=cache, memtable_bytes=64 << 20)
        self.db = siftdb.Db(path, **self.options)

    def load(self, records):
        for chunk in chunks(records):
            with self.db.write_batch() as batch:
                for k, v in chunk:
                    batch[k] = v

    def settle(self):
        self.db.compact()
        start = time.perf_counter()
        self.db.add_index("color", field="color")
        return time.perf_counter() - start

    def get(self, k):
        return self.db.get(k)

    def put(self, k, v):
        self.db[k] = v

    def scan10(self, k):
        return list(itertools.islice(self.db.items(start=k), 10))

    def find_rare(self):
        return [k for k, _ in self.db.find("color", RARE)]

    def close(self):
        self.db.close()


class RocksDict:
    name = "rocksdict"

    def __init__(self, path, cache):
        import rocksdict

        options = rocksdict.Options(raw_mode=True)
        options.create_if_missing(True)
        options.set_compression_type(rocksdict.DBCompressionType.none())
        options.set_write_buffer_size(64 << 20)
        table = rocksdict.BlockBasedOptions()
        table.set_block_cache(rocksdict.Cache(cache))
        table.set_bloom_filter(10, False)
        options.set_block_based_table_factory(table)
        self.options = "raw_mode, no compression, 64 MiB write buffer, LRU cache, Bloom 10 bits/key"
        self.db = rocksdict.Rdict(path, options)

    def load(self, records):
        import rocksdict

        for chunk in chunks(records):
            batch = rocksdict.WriteBatch(raw_mode=True)
            for k, v in chunk:
                batch.put(k, v)
            self.db.write(batch)

    def settle(self):
        self.db.flush()
        self.db.compact_range(None, None)
        return None

    def get(self, k):
        return self.db.get(k)

    def put(self, k, v):
        self.db[k] = v

    def scan10(self, k):
        return list(itertools.islice(self.db.items(from_key=k), 10))

    def find_rare(self):
        return python_scan(self.db.items())

    def close(self):
        self.db.close()


class Plyvel:
    name = "plyvel"

    def __init__(self, path, cache):
        import plyvel

        self.options = "bloom_filter_bits=10, lru_cache_size, no compression, 64 MiB write buffer"
        self.db = plyvel.DB(
            path, create_if_missing=True, bloom_filter_bits=10, lru_cache_size=cache,
            compression=None, write_buffer_size=64 << 20,
        )

    def load(self, records):
        for chunk in chunks(records):
            with self.db.write_batch() as batch:
                for k, v in chunk:
                    batch.put(k, v)

    def settle(self):
        self.db.compact_range()
        return None

    def get(self, k):
        return self.db.get(k)

    def put(self, k, v):
        self.db.put(k, v)

    def scan10(self, k):
        return list(itertools.islice(self.db.iterator(start=k), 10))

    def find_rare(self):
        return python_scan(self.db.iterator())

    def close(self):
        self.db.close()


class Lmdb:
    name = "lmdb"

    def __init__(self, path, cache):
        import lmdb

        self.options = "map_size 8 GiB, sync=False, writemap=False, readahead=False (no filter: a B+tree)"
        self.env = lmdb.open(path, map_size=8 << 30, sync=False, readahead=False)

    def load(self, records):
        for chunk in chunks(records):
            with self.env.begin(write=True) as txn:
                for k, v in chunk:
                    txn.put(k, v)

    def settle(self):
        return None

    def get(self, k):
        with self.env.begin() as txn:
            return txn.get(k)

    def put(self, k, v):
        with self.env.begin(write=True) as txn:
            txn.put(k, v)

    def scan10(self, k):
        with self.env.begin() as txn:
            cursor = txn.cursor()
            if not cursor.set_range(k):
                return []
            return list(itertools.islice(cursor, 10))

    def find_rare(self):
        with self.env.begin() as txn:
            return python_scan(txn.cursor())

    def close(self):
        self.env.close()


ENGINES = {"sift": Sift, "rocksdict": RocksDict, "plyvel": Plyvel, "lmdb": Lmdb}


def chunks(records):
    for start in range(0, len(records), BATCH):
        yield records[start : start + BATCH]


def timed(work, items):
    start = time.perf_counter()
    for item in items:
        work(item)
    return len(items) / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num", type=int, default=1_000_000)
    parser.add_argument("--ops", type=int, default=200_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--cache-mib", type=int, default=64)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--engines", default="sift,rocksdict,plyvel,lmdb")
    args = parser.parse_args()
    names = args.engines.split(",")
    if names[0] != "sift" or any(n not in ENGINES for n in names):
        parser.error(f"--engines: sift first, then any of {', '.join(ENGINES)}")

    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    print(f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs")
    for package in ["siftdb", "rocksdict", "plyvel", "lmdb"]:
        try:
            print(f"  {package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            pass
    print(f"{args.num:,} records, {args.ops:,} operations per measurement, {args.reps} rounds, "
          f"{args.cache_mib} MiB block cache each")

    root = args.dir or tempfile.mkdtemp(prefix="sift-py-bench-")
    rng = random.Random(1)
    ids = list(range(args.num))
    rare = set(rng.sample(ids, 10))
    records = [(key(2 * i), value(i, i in rare)) for i in ids]
    rng.shuffle(records)
    expected_rare = sorted(key(2 * i) for i in rare)

    rng = random.Random(2)
    present = [rng.randrange(args.num) for _ in range(args.ops)]
    present_keys = [key(2 * i) for i in present]
    missing_keys = [key(2 * rng.randrange(args.num) + 1) for _ in range(args.ops)]
    scan_keys = present_keys[: max(args.ops // 10, 1)]
    # Overwrites keep each record's color, so the rare records stay rare.
    put_items = [(key(2 * i), value(i, i in rare)) for i in present]
    by_key = dict(records)

    engines = []
    for name in names:
        path = os.path.join(root, name)
        shutil.rmtree(path, ignore_errors=True)
        engine = ENGINES[name](path, args.cache_mib << 20)
        start = time.perf_counter()
        engine.load(records)
        loaded = time.perf_counter() - start
        start = time.perf_counter()
        index = engine.settle()
        settled = time.perf_counter() - start
        extra = f", index defined and filled in {index:.2f} s" if index is not None else ""
        print(f"{name}: loaded in {loaded:.1f} s ({args.num / loaded:,.0f} records/s), "
              f"compacted in {settled:.1f} s{extra}; options: {engine.options}")
        for k in present_keys[:1000]:
            assert engine.get(k) == by_key[k], (name, k)
        for k in missing_keys[:1000]:
            assert engine.get(k) is None, (name, k)
        assert engine.find_rare() == expected_rare, name
        engines.append(engine)

    def check_scan(engine):
        for k in scan_keys[:100]:
            got = engine.scan10(k)
            assert len(got) == 10 or got[-1][0] == key(2 * (args.num - 1)), (engine.name, k)
            assert bytes(got[0][0]) == k, (engine.name, k)

    workloads = {
        "get_present": lambda e: timed(e.get, present_keys),
        "get_missing": lambda e: timed(e.get, missing_keys),
        "scan10": lambda e: timed(e.scan10, scan_keys),
        "put": lambda e: timed(lambda kv: e.put(*kv), put_items),
        "find_rare": lambda e: timed(lambda _: e.find_rare(), [None]),
    }
    results = {(w, e.name): [] for w in workloads for e in engines}
    for _ in range(args.reps):
        for workload, run in workloads.items():
            for engine in engines:
                if workload == "scan10":
                    check_scan(engine)
                results[(workload, engine.name)].append(run(engine))
    for engine in engines:
        assert engine.find_rare() == expected_rare, engine.name
        engine.close()

    print()
    print(f"{'workload':<12} {'engine':<10} {'median':>14}   sift / engine")
    for workload in workloads:
        sift = statistics.median(results[(workload, "sift")])
        for engine in engines:
            median = statistics.median(results[(workload, engine.name)])
            shown = (f"{1 / median * 1000:10.2f} ms/q" if workload == "find_rare"
                     else f"{median:>10,.0f} op/s")
            print(f"{workload:<12} {engine.name:<10} {shown:>14}   {sift / median:6.2f}x")
    if args.dir is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
