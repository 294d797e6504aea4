"""Sift from Python against rocksdict (RocksDB), plyvel (LevelDB) and lmdb,
in one process, on the same keys, values and key lists.

Records
  --num records (default 1,000,000). Key of record i: b"key%013d" % (2*i)
  (16 bytes, even numbers only). Value: a compact JSON document of exactly
  100 bytes, {"id": i, "color": c, "pad": "xx..."}, where c is
  COLORS[i % 50] (50 common color names) except on exactly 10 records,
  drawn with random.Random(1), whose color is "ultraviolet". The records
  are inserted in an order shuffled by the same generator.

Options, the same wherever the engine has the knob
  - block cache: --cache-mib (default 64 MiB) for sift, rocksdict, plyvel;
  - memtable / write buffer: 64 MiB for sift, rocksdict, plyvel;
  - Bloom filter 10 bits/key: rocksdict set_bloom_filter(10, False), plyvel
    bloom_filter_bits=10; Sift has no Python knob for it and uses its
    default (Monkey allocation averaging 10 bits/key; its levels and filter
    kinds are printed after the load);
  - no compression; 4 KiB blocks (every engine's default);
  - unsynced writes (sift sync_writes=False, rocksdict/plyvel default
    sync=False, lmdb sync=False);
  - lmdb: map_size 8 GiB, sync=False, readahead=False; a B+tree, no cache
    or filter knobs (it reads through the page cache).
  The options actually passed are printed for each engine.

Phases, per engine: bulk load in write batches of 1,000 records (lmdb: one
write transaction per 1,000); then a settle step to a steady on-disk state:
sift flush() + compact(), then add_index("color", field="color") timed on
its own; rocksdict flush() + compact_range(None, None); plyvel
compact_range(); lmdb nothing. Each store's record count is checked.

Measurements, over key lists drawn once with random.Random(2) and shared by
every engine, timed with time.perf_counter (garbage collector off inside
the timed region, collected before it):
  - get_present: --ops uniform existing keys, get() one at a time;
  - get_missing: --ops absent keys inside the key range (odd numbers
    b"key%013d" % (2*j+1)), so only a filter can answer without a block;
  - scan10: --ops seeks to a uniform existing key, reading 10 entries
    (sift islice(db.items(start=k), 10); rocksdict islice(db.items(
    from_key=k), 10); plyvel islice(db.iterator(start=k), 10); lmdb
    cursor.set_range(k) then 10 entries);
  - put: --ops overwrites of uniform existing keys, one put per call,
    unsynced, with the record's own value (so every later answer can still
    be checked; Sift maintains its color index on these puts, the others
    have no index to maintain);
  - find_rare: the 10 "ultraviolet" records, once per round. Sift:
    list(db.find("color", b"ultraviolet")) on its value index. The others:
    the scan a Python user writes without an index: every item, a bytes
    test for b"ultraviolet", then json.loads to confirm the field.
lmdb runs each get/scan measurement inside one read transaction (one
cursor for the scans) and each put in its own write transaction.

Rounds are interleaved: for round in --reps: for workload: for engine, the
reads' rounds first, on the settled stores, then the puts' rounds (their
overwrites would otherwise leave later reads to meet full memtables and
level-0 tables); each round's numbers are printed. The
median over rounds is reported per (workload, engine), with the ratio of
Sift's throughput to the engine's (>1: Sift is faster); for find_rare the
median is in seconds per query and the ratio is engine seconds / Sift
seconds, the same orientation.

Answers are checked and a wrong one stops the run: every get_present result
equals the record's value, every get_missing result is None, every scan
starts at its key and returns min(10, records left) entries (the first
1,000 scans are checked entry by entry), every find_rare returns the same
10 keys, and each store holds --num records after the load and at the end.
"""

import argparse
import collections
import gc
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

COLORS = [
    "red", "green", "blue", "yellow", "orange", "purple", "pink", "brown",
    "black", "white", "gray", "cyan", "magenta", "lime", "maroon", "navy",
    "olive", "teal", "silver", "gold", "beige", "coral", "crimson", "indigo",
    "ivory", "khaki", "lavender", "mint", "peach", "plum", "salmon", "tan",
    "turquoise", "violet", "amber", "azure", "bronze", "charcoal", "cream",
    "emerald", "fuchsia", "jade", "lilac", "mauve", "ochre", "ruby",
    "sapphire", "scarlet", "sepia", "umber",
]
assert len(COLORS) == 50 and len(set(COLORS)) == 50
RARE = "ultraviolet"
RARE_BYTES = RARE.encode()
RARE_COUNT = 10
VALUE_BYTES = 100
BATCH = 1000
MEMTABLE = 64 << 20
WORKLOADS = ["get_present", "get_missing", "scan10", "find_rare", "put"]
# Reads run first, every round of them on the settled stores; the puts'
# rounds come last, as their overwrites would leave the later reads to meet
# full memtables and level-0 tables instead.
PHASES = [WORKLOADS[:-1], WORKLOADS[-1:]]


def key(i):
    return b"key%013d" % i


def value(i, rare):
    color = RARE if rare else COLORS[i % len(COLORS)]
    head = '{"id":%d,"color":"%s","pad":"' % (i, color)
    out = (head + "x" * (VALUE_BYTES - len(head) - 2) + '"}').encode()
    assert len(out) == VALUE_BYTES and json.loads(out)["color"] == color
    return out


def python_scan(items):
    """The search a Python user writes without an index."""
    found = []
    for k, v in items:
        if RARE_BYTES in v and json.loads(v)["color"] == RARE:
            found.append(bytes(k))
    return found


def scan10_sizes(iterate, keys):
    """Seek to each key and read 10 entries; the count read per seek."""
    islice = itertools.islice
    return [len(list(islice(iterate(k), 10))) for k in keys]


class Sift:
    name = "sift"

    def __init__(self, path, cache):
        self.options = dict(memtable_bytes=MEMTABLE, block_cache_bytes=cache, sync_writes=False)
        self.db = siftdb.Db(path, **self.options)
        self.describe = f"siftdb.Db(path, {', '.join(f'{k}={v}' for k, v in self.options.items())})"

    def load(self, records):
        db = self.db
        for chunk in chunks(records):
            with db.write_batch() as batch:
                for k, v in chunk:
                    batch[k] = v

    def settle(self):
        self.db.flush()
        self.db.compact()

    def add_index(self):
        self.db.add_index("color", field="color")

    def count(self):
        return sum(1 for _ in self.db.keys())

    def gets(self, keys):
        return list(map(self.db.get, keys))

    def scans(self, keys):
        items = self.db.items
        return scan10_sizes(lambda k: items(start=k), keys)

    def scan_one(self, k):
        return list(itertools.islice(self.db.items(start=k), 10))

    def puts(self, items):
        collections.deque(itertools.starmap(self.db.put, items), maxlen=0)

    def find_rare(self):
        return [k for k, _ in self.db.find("color", RARE_BYTES)]

    def explain_rare(self):
        it = self.db.find("color", RARE_BYTES)
        found = list(it)
        return len(found), it.explain()

    def shape(self):
        stats = self.db.stats()
        levels = [
            f"L{n}: {lv['tables']} tables, {lv['entries']:,} entries, "
            f"{lv['filter_kind'] or 'no filter'} {lv['filter_bits_per_key']:.2f} bits/key"
            for n, lv in enumerate(stats["levels"]) if lv["tables"]
        ]
        return "; ".join(levels)

    def close(self):
        self.db.close()


class RocksDict:
    name = "rocksdict"

    def __init__(self, path, cache):
        import rocksdict

        options = rocksdict.Options(raw_mode=True)
        options.create_if_missing(True)
        options.set_compression_type(rocksdict.DBCompressionType.none())
        options.set_write_buffer_size(MEMTABLE)
        table = rocksdict.BlockBasedOptions()
        table.set_block_cache(rocksdict.Cache(cache))
        table.set_bloom_filter(10, False)
        options.set_block_based_table_factory(table)
        self.describe = (
            "rocksdict.Rdict(path, Options(raw_mode=True); create_if_missing(True); "
            "set_compression_type(none); "
            f"set_write_buffer_size({MEMTABLE}); BlockBasedOptions: "
            f"set_block_cache(Cache({cache})), set_bloom_filter(10, False); "
            "everything else default)"
        )
        self.db = rocksdict.Rdict(path, options)

    def load(self, records):
        import rocksdict

        db = self.db
        for chunk in chunks(records):
            batch = rocksdict.WriteBatch(raw_mode=True)
            for k, v in chunk:
                batch.put(k, v)
            db.write(batch)

    def settle(self):
        self.db.flush()
        self.db.compact_range(None, None)

    def count(self):
        return sum(1 for _ in self.db.keys())

    def gets(self, keys):
        return list(map(self.db.get, keys))

    def scans(self, keys):
        items = self.db.items
        return scan10_sizes(lambda k: items(from_key=k), keys)

    def scan_one(self, k):
        return list(itertools.islice(self.db.items(from_key=k), 10))

    def puts(self, items):
        collections.deque(itertools.starmap(self.db.put, items), maxlen=0)

    def find_rare(self):
        return python_scan(self.db.items())

    def shape(self):
        levels = []
        for n in range(7):
            files = self.db.property_value(f"rocksdb.num-files-at-level{n}")
            if files and files != "0":
                levels.append(f"L{n}: {files} files")
        return "; ".join(levels)

    def close(self):
        self.db.close()


class Plyvel:
    name = "plyvel"

    def __init__(self, path, cache):
        import plyvel

        self.options = dict(
            create_if_missing=True, bloom_filter_bits=10, lru_cache_size=cache,
            compression=None, write_buffer_size=MEMTABLE,
        )
        self.db = plyvel.DB(path, **self.options)
        self.describe = f"plyvel.DB(path, {', '.join(f'{k}={v}' for k, v in self.options.items())})"

    def load(self, records):
        db = self.db
        for chunk in chunks(records):
            with db.write_batch() as batch:
                for k, v in chunk:
                    batch.put(k, v)

    def settle(self):
        self.db.compact_range()

    def count(self):
        return sum(1 for _ in self.db.iterator(include_value=False))

    def gets(self, keys):
        return list(map(self.db.get, keys))

    def scans(self, keys):
        iterator = self.db.iterator
        return scan10_sizes(lambda k: iterator(start=k), keys)

    def scan_one(self, k):
        return list(itertools.islice(self.db.iterator(start=k), 10))

    def puts(self, items):
        collections.deque(itertools.starmap(self.db.put, items), maxlen=0)

    def find_rare(self):
        return python_scan(self.db.iterator())

    def shape(self):
        files = []
        for n in range(7):
            count = self.db.get_property(b"leveldb.num-files-at-level%d" % n)
            if count and count != b"0":
                files.append(f"L{n}: {count.decode()} files")
        return "; ".join(files)

    def close(self):
        self.db.close()


class Lmdb:
    name = "lmdb"

    def __init__(self, path, cache):
        import lmdb

        self.options = dict(map_size=8 << 30, sync=False, readahead=False)
        self.env = lmdb.open(path, **self.options)
        self.describe = (
            f"lmdb.open(path, {', '.join(f'{k}={v}' for k, v in self.options.items())}); "
            "one read txn per get/scan measurement, one write txn per put"
        )

    def load(self, records):
        env = self.env
        for chunk in chunks(records):
            with env.begin(write=True) as txn:
                for k, v in chunk:
                    txn.put(k, v)

    def settle(self):
        self.env.sync(True)

    def count(self):
        with self.env.begin() as txn:
            counted = sum(1 for _ in txn.cursor().iternext(values=False))
            assert counted == txn.stat()["entries"], (counted, txn.stat())
            return counted

    def gets(self, keys):
        with self.env.begin() as txn:
            return list(map(txn.get, keys))

    def scans(self, keys):
        with self.env.begin() as txn:
            cursor = txn.cursor()

            def seek(k):
                return cursor if cursor.set_range(k) else iter(())

            return scan10_sizes(seek, keys)

    def scan_one(self, k):
        with self.env.begin() as txn:
            cursor = txn.cursor()
            if not cursor.set_range(k):
                return []
            return list(itertools.islice(cursor, 10))

    def puts(self, items):
        begin = self.env.begin

        def put(k, v):
            with begin(write=True) as txn:
                txn.put(k, v)

        collections.deque(itertools.starmap(put, items), maxlen=0)

    def find_rare(self):
        with self.env.begin() as txn:
            return python_scan(txn.cursor())

    def shape(self):
        stat = self.env.stat()
        return f"depth {stat['depth']}, {stat['leaf_pages']:,} leaf pages"

    def close(self):
        self.env.close()


ENGINES = {"sift": Sift, "rocksdict": RocksDict, "plyvel": Plyvel, "lmdb": Lmdb}


def chunks(records):
    for start in range(0, len(records), BATCH):
        yield records[start : start + BATCH]


def timed(work, *args):
    """(seconds, result) of work(*args), the garbage collector off."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        result = work(*args)
        return time.perf_counter() - start, result
    finally:
        gc.enable()


def disk_bytes(path):
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(dirpath, name)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


def check(condition, *what):
    if not condition:
        raise SystemExit(f"WRONG ANSWER: {' '.join(map(str, what))}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num", type=int, default=1_000_000, help="records")
    parser.add_argument("--ops", type=int, default=200_000, help="operations per measurement")
    parser.add_argument("--reps", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--cache-mib", type=int, default=64, help="block cache of each engine")
    parser.add_argument("--dir", default=None, help="where the stores go (default: a tempdir)")
    parser.add_argument("--engines", default="sift,rocksdict,plyvel,lmdb")
    args = parser.parse_args()
    names = args.engines.split(",")
    if "sift" not in names or any(n not in ENGINES for n in names) or len(set(names)) != len(names):
        parser.error(f"--engines: sift and any of {', '.join(ENGINES)}")
    names = ["sift"] + [n for n in names if n != "sift"]
    if args.num < 2 * RARE_COUNT:
        parser.error("--num: at least 20")

    print(f"$ {' '.join([os.path.basename(sys.executable)] + sys.argv)}")
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    print(f"Python {platform.python_version()} ({platform.python_implementation()}) "
          f"on {platform.system()} {platform.machine()}, {os.cpu_count()} CPUs")
    for package in ["siftdb", "rocksdict", "plyvel", "lmdb"]:
        try:
            extra = ""
            if package == "plyvel":
                import plyvel
                extra = f" (LevelDB {plyvel.__leveldb_version__})"
            elif package == "lmdb":
                import lmdb
                extra = f" (liblmdb {'.'.join(map(str, lmdb.version()))})"
            print(f"  {package} {metadata.version(package)}{extra}")
        except metadata.PackageNotFoundError:
            print(f"  {package}: not installed")
    print(f"records: {args.num:,} x (16-byte key b'key%013d' of 2i, {VALUE_BYTES}-byte JSON value), "
          f"{RARE_COUNT} with color {RARE!r}, inserted in shuffled order (seed 1), "
          f"batches of {BATCH}")
    print(f"measurements: {args.ops:,} operations each (find_rare: 1 query), {args.reps} interleaved "
          f"rounds, median reported; block cache {args.cache_mib} MiB, memtable "
          f"{MEMTABLE >> 20} MiB, Bloom 10 bits/key, no compression, unsynced writes")

    root = args.dir or tempfile.mkdtemp(prefix="sift-py-bench-")
    os.makedirs(root, exist_ok=True)
    print(f"stores under {root}")
    rng = random.Random(1)
    ids = list(range(args.num))
    rare = set(rng.sample(ids, RARE_COUNT))
    records = [(key(2 * i), value(i, i in rare)) for i in ids]
    rng.shuffle(records)
    expected_rare = sorted(key(2 * i) for i in rare)
    values = [value(i, i in rare) for i in ids]  # by record number

    rng = random.Random(2)
    present = [rng.randrange(args.num) for _ in range(args.ops)]
    present_keys = [key(2 * i) for i in present]
    expected_present = [values[i] for i in present]
    missing_keys = [key(2 * rng.randrange(args.num) + 1) for _ in range(args.ops)]
    scan_ids = [rng.randrange(args.num) for _ in range(args.ops)]
    scan_keys = [key(2 * i) for i in scan_ids]
    expected_scan = [min(10, args.num - i) for i in scan_ids]
    put_ids = [rng.randrange(args.num) for _ in range(args.ops)]
    put_items = [(key(2 * i), values[i]) for i in put_ids]

    def check_gets(engine, got, expected, label):
        check(len(got) == len(expected), engine.name, label, "count", len(got))
        if got != expected:
            bad = next(n for n, (g, e) in enumerate(zip(got, expected)) if g != e)
            keys = present_keys if label == "get_present" else missing_keys
            check(False, engine.name, label, keys[bad], "->", got[bad], "expected", expected[bad])

    def check_scans(engine, sizes):
        check(sizes == expected_scan, engine.name, "scan10: entry counts differ from",
              "min(10, records left)")

    def check_scan_entries(engine):
        for i in scan_ids[:1000]:
            got = [(bytes(k), bytes(v)) for k, v in engine.scan_one(key(2 * i))]
            want = [(key(2 * j), values[j]) for j in range(i, min(i + 10, args.num))]
            check(got == want, engine.name, "scan10 from", key(2 * i), got[:2], "...")

    def check_find(engine, found):
        check(sorted(found) == expected_rare, engine.name, "find_rare:", sorted(found),
              "expected", expected_rare)

    engines = []
    print()
    for name in names:
        path = os.path.join(root, name)
        shutil.rmtree(path, ignore_errors=True)
        engine = ENGINES[name](path, args.cache_mib << 20)
        print(f"{name}: {engine.describe}")
        gc.collect()
        start = time.perf_counter()
        engine.load(records)
        loaded = time.perf_counter() - start
        start = time.perf_counter()
        engine.settle()
        settled = time.perf_counter() - start
        line = (f"  loaded in {loaded:.2f} s ({args.num / loaded:,.0f} records/s), "
                f"settled in {settled:.2f} s")
        if name == "sift":
            start = time.perf_counter()
            engine.add_index()
            line += f", add_index('color', field='color') in {time.perf_counter() - start:.2f} s"
        print(line)
        print(f"  on disk {disk_bytes(path) / 2**20:.1f} MiB; shape: {engine.shape()}")
        count = engine.count()
        check(count == args.num, name, "count after load", count, "expected", args.num)
        check_gets(engine, engine.gets(present_keys[:2000]), expected_present[:2000], "get_present")
        check_gets(engine, engine.gets(missing_keys[:2000]), [None] * 2000, "get_missing")
        check_scan_entries(engine)
        check_find(engine, engine.find_rare())
        if name == "sift":
            n, explain = engine.explain_rare()
            print(f"  find explain: {explain}")
        engines.append(engine)

    results = {(w, e.name): [] for w in WORKLOADS for e in engines}
    print()
    for phase, rep in itertools.product(PHASES, range(args.reps)):
        for workload in phase:
            for engine in engines:
                if workload == "get_present":
                    seconds, got = timed(engine.gets, present_keys)
                    check_gets(engine, got, expected_present, workload)
                elif workload == "get_missing":
                    seconds, got = timed(engine.gets, missing_keys)
                    check_gets(engine, got, [None] * len(missing_keys), workload)
                elif workload == "scan10":
                    seconds, sizes = timed(engine.scans, scan_keys)
                    check_scans(engine, sizes)
                elif workload == "put":
                    seconds, _ = timed(engine.puts, put_items)
                else:
                    seconds, found = timed(engine.find_rare)
                    check_find(engine, found)
                results[(workload, engine.name)].append(
                    seconds if workload == "find_rare" else args.ops / seconds)
        print(f"round {rep + 1}/{args.reps} of {'/'.join(phase)}: " + "; ".join(
            f"{w} " + " ".join(
                f"{e.name}={results[(w, e.name)][-1]:.4f}s" if w == "find_rare"
                else f"{e.name}={results[(w, e.name)][-1]:,.0f}"
                for e in engines)
            for w in phase))

    print()
    for engine in engines:
        count = engine.count()
        check(count == args.num, engine.name, "count at the end", count)
        check_gets(engine, engine.gets(present_keys), expected_present, "get_present")
        check_scan_entries(engine)
        check_find(engine, engine.find_rare())
        print(f"{engine.name}: end state checked; on disk "
              f"{disk_bytes(os.path.join(root, engine.name)) / 2**20:.1f} MiB; shape: {engine.shape()}")
        if engine.name == "sift":
            n, explain = engine.explain_rare()
            print(f"  find explain at the end: {explain}")
        engine.close()

    print()
    print(f"{'workload':<12} {'engine':<10} {'median':>16} {'min..max of rounds':>26}"
          f"   sift/engine (>1: sift faster)")
    for workload in WORKLOADS:
        rows = {e.name: results[(workload, e.name)] for e in engines}
        sift = statistics.median(rows["sift"])
        for name, runs in rows.items():
            median = statistics.median(runs)
            if workload == "find_rare":
                shown = f"{median:12.4f} s/q"
                spread = f"{min(runs):.4f}..{max(runs):.4f} s"
                ratio = median / sift
            else:
                shown = f"{median:12,.0f} op/s"
                spread = f"{min(runs):,.0f}..{max(runs):,.0f}"
                ratio = sift / median
            print(f"{workload:<12} {name:<10} {shown:>16} {spread:>26}   {ratio:8.2f}x")
    print()
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    if args.dir is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
