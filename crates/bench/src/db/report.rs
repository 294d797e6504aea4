//! Samples, their medians over repetitions, and the printed table / JSON.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::engine::{Engine, disk_bytes};
use super::workload::{Run, Workload};
use crate::filters::measure::Spread;
use crate::filters::report::render;

/// The state of the store a workload ran on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Shape {
    /// The run *is* the load (fill workloads).
    Load,
    /// After the load, flushed, background work finished.
    Loaded,
    /// After a full compaction.
    Compacted,
}

impl Shape {
    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Load => "load",
            Self::Loaded => "loaded",
            Self::Compacted => "compacted",
        }
    }
}

/// One run of one workload on one engine.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    ops_per_sec: f64,
    cpu_ops_per_sec: f64,
    probes_per_op: f64,
    fpr: Option<f64>,
    filter_bits_per_key: Option<f64>,
    scan_filter_bits_per_key: Option<f64>,
    tables: u64,
    disk_bytes: u64,
    stall_ms: Option<f64>,
    write_amp: Option<f64>,
}

impl Sample {
    /// Operations per second of wall time.
    pub fn ops_per_sec(&self) -> f64 {
        self.ops_per_sec
    }

    /// Derives the figures of `run`, and the store's from `engine` and
    /// `dir` as the run left them. `all_absent`: see [`Sample::count_filters`].
    pub fn of(run: &Run, engine: &dyn Engine, dir: &Path, all_absent: bool) -> Self {
        let per_sec = |d: std::time::Duration| {
            let secs = d.as_secs_f64();
            if secs > 0.0 {
                run.ops as f64 / secs
            } else {
                f64::NAN
            }
        };
        let shape = engine.shape();
        let mut sample = Self {
            ops_per_sec: per_sec(run.wall),
            cpu_ops_per_sec: per_sec(run.cpu),
            probes_per_op: 0.0,
            fpr: None,
            filter_bits_per_key: shape.filter_bits_per_key,
            scan_filter_bits_per_key: shape.scan_filter_bits_per_key,
            tables: shape.tables,
            disk_bytes: disk_bytes(dir),
            stall_ms: None,
            write_amp: None,
        };
        sample.count_filters(run, all_absent);
        sample
    }

    /// Takes the filter figures from `run`: the timed run itself, or an
    /// untimed pass of the same workload that counted them. `all_absent`:
    /// every lookup was for an absent key, so every filter "maybe" was a
    /// false positive (how fjall's FPR is measured; Sift and RocksDB count
    /// their false positives).
    pub fn count_filters(&mut self, run: &Run, all_absent: bool) {
        let f = run.filters;
        self.fpr = match f.false_positives {
            Some(fp) if fp + f.negatives > 0 => Some(fp as f64 / (fp + f.negatives) as f64),
            None if all_absent && f.probes > 0 => {
                Some((f.probes - f.negatives) as f64 / f.probes as f64)
            }
            _ => None,
        };
        self.probes_per_op = if run.ops > 0 {
            f.probes as f64 / run.ops as f64
        } else {
            0.0
        };
    }

    /// Takes a threaded write's cost: the engine's write stall time over
    /// the timed puts, and bytes written per byte put (see
    /// [`super::writes::Meter`]), each where measured.
    pub fn count_writes(&mut self, stall: Option<Duration>, write_amp: Option<f64>) {
        self.stall_ms = stall.map(|d| d.as_secs_f64() * 1000.0);
        self.write_amp = write_amp;
    }

    /// Filter probes per operation (for tests of the harness).
    #[cfg(test)]
    pub fn probes_per_op(&self) -> f64 {
        self.probes_per_op
    }
}

/// Medians over repetitions of one (engine, workload, shape, threads).
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    engine: String,
    workload: &'static str,
    shape: &'static str,
    /// Threads that ran the workload's operations at once (`fillrandom`,
    /// `fillseq`: 1; `readwhilewriting`: its readers, the writer not
    /// counted; `fillthreads`, `fillsync`: the writers).
    threads: usize,
    /// Which filters `probes_per_op` and `fpr` count: `key` filters, or
    /// `scan` filters (prefix and range filters) for the scan workloads.
    filters: &'static str,
    ops_per_sec: f64,
    cpu_ops_per_sec: f64,
    probes_per_op: f64,
    fpr: Option<f64>,
    filter_bits_per_key: Option<f64>,
    /// Bits of prefix and range filters per entry, where the engine keeps
    /// them apart from the key filters (Sift).
    scan_filter_bits_per_key: Option<f64>,
    tables: u64,
    disk_bytes: u64,
    /// `(max - min) / median` of ops/s over repetitions: the noise.
    ops_spread: f64,
    /// Threaded writes: the engine's write stall time during the timed
    /// puts, in ms (Sift, RocksDB; `None` for fjall, which counts none).
    stall_ms: Option<f64>,
    /// `fillthreads`: bytes the process wrote from the first put until the
    /// flush and compactions after the fill finished, over the bytes put.
    write_amp: Option<f64>,
}

impl Row {
    /// Medians of `samples`.
    pub fn summarize(
        engine: &str,
        workload: Workload,
        shape: Shape,
        threads: usize,
        samples: &[Sample],
    ) -> Self {
        let median =
            |f: fn(&Sample) -> f64| Spread::of(&samples.iter().map(f).collect::<Vec<_>>()).median;
        let optional = |f: fn(&Sample) -> Option<f64>| {
            let values: Vec<f64> = samples.iter().filter_map(f).collect();
            (!values.is_empty()).then(|| Spread::of(&values).median)
        };
        let ops = Spread::of(&samples.iter().map(|s| s.ops_per_sec).collect::<Vec<_>>());
        Self {
            engine: engine.to_owned(),
            workload: workload.name(),
            shape: shape.name(),
            threads,
            filters: if workload.scans() { "scan" } else { "key" },
            ops_per_sec: ops.median,
            cpu_ops_per_sec: median(|s| s.cpu_ops_per_sec),
            probes_per_op: median(|s| s.probes_per_op),
            fpr: optional(|s| s.fpr),
            filter_bits_per_key: optional(|s| s.filter_bits_per_key),
            scan_filter_bits_per_key: optional(|s| s.scan_filter_bits_per_key),
            tables: median(|s| s.tables as f64) as u64,
            disk_bytes: median(|s| s.disk_bytes as f64) as u64,
            ops_spread: ops.relative_range(),
            stall_ms: optional(|s| s.stall_ms),
            write_amp: optional(|s| s.write_amp),
        }
    }

    /// Whether the row is a threaded write ([`Workload::WRITES`]).
    fn threaded_write(&self) -> bool {
        Workload::WRITES.iter().any(|w| w.name() == self.workload)
    }

    /// Whether `other` ran the same workload in the same shape.
    fn same_workload(&self, other: &Row) -> bool {
        self.workload == other.workload && self.shape == other.shape
    }

    /// One JSON object.
    pub fn json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string(self)?)
    }
}

/// The table: one line per row, with each engine's ops/s over fjall's for
/// the same workload, shape and threads, and over RocksDB's when it ran (then
/// a note says where RocksDB's filter counters come from). When reads ran at
/// several thread counts, the [`scaling`] summary follows.
pub fn table(rows: &[Row]) -> String {
    let with_rocksdb = rows.iter().any(|r| r.engine == "rocksdb");
    let with_noscan = rows.iter().any(|r| r.engine == "sift-noscan");
    let with_writes = rows.iter().any(Row::threaded_write);
    let mut headers = vec![
        "engine", "workload", "shape", "threads", "ops/s", "vs fjall",
    ];
    if with_rocksdb {
        headers.push("vs rocksdb");
    }
    if with_noscan {
        headers.push("vs noscan");
    }
    headers.extend(["ops/cpu-s", "spread"]);
    if with_writes {
        headers.extend(["stall ms", "w-amp"]);
    }
    headers.extend([
        "probes/op",
        "fpr %",
        "bits/key",
        "scan b/key",
        "tables",
        "disk MiB",
    ]);
    // `row`'s ops/s over `baseline`'s for the same workload, shape, threads.
    let versus = |row: &Row, baseline: &str| {
        rows.iter()
            .find(|r| r.engine == baseline && r.threads == row.threads && r.same_workload(row))
            .filter(|_| row.engine != baseline)
            .map_or(String::new(), |b| {
                format!("{:.2}x", row.ops_per_sec / b.ops_per_sec)
            })
    };
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut cells = vec![
                r.engine.clone(),
                r.workload.to_owned(),
                r.shape.to_owned(),
                r.threads.to_string(),
                format!("{:.0}", r.ops_per_sec),
                versus(r, "fjall"),
            ];
            if with_rocksdb {
                cells.push(versus(r, "rocksdb"));
            }
            if with_noscan {
                cells.push(versus(r, "sift-noscan"));
            }
            cells.extend([
                format!("{:.0}", r.cpu_ops_per_sec),
                format!("{:.0}%", r.ops_spread * 100.0),
            ]);
            if with_writes {
                cells.extend([
                    r.stall_ms.map_or("-".into(), |ms| format!("{ms:.0}")),
                    r.write_amp.map_or("-".into(), |a| format!("{a:.2}")),
                ]);
            }
            cells.extend([
                format!("{:.2}", r.probes_per_op),
                r.fpr.map_or("-".into(), |p| format!("{:.3}", p * 100.0)),
                r.filter_bits_per_key
                    .map_or("-".into(), |b| format!("{b:.2}")),
                r.scan_filter_bits_per_key
                    .map_or("-".into(), |b| format!("{b:.2}")),
                r.tables.to_string(),
                format!("{:.1}", r.disk_bytes as f64 / (1 << 20) as f64),
            ]);
            cells
        })
        .collect();
    let mut out = render(&headers, &cells);
    if rows.iter().any(|r| r.filters == "scan") {
        out.push_str(SCAN_NOTE);
    }
    // The note is about read workloads' counters: none, none to explain.
    if with_rocksdb && rows.iter().any(|r| r.shape != Shape::Load.name()) {
        out.push_str(ROCKSDB_NOTE);
    }
    if with_writes {
        out.push_str(WRITES_NOTE);
    }
    if let Some(scaling) = scaling(rows) {
        out.push('\n');
        out.push_str(&scaling);
    }
    out
}

/// When reads or threaded writes ran at several thread counts: per engine,
/// workload and shape, the ops/s at the lowest count and, for each higher
/// count `T`, ops/s(T) over that figure. `None` for a single count.
pub fn scaling(rows: &[Row]) -> Option<String> {
    let reads: Vec<&Row> = rows
        .iter()
        .filter(|r| r.shape != Shape::Load.name() || r.threaded_write())
        .collect();
    let mut counts: Vec<usize> = reads.iter().map(|r| r.threads).collect();
    counts.sort_unstable();
    counts.dedup();
    let (&base, higher) = counts
        .split_first()
        .filter(|(_, higher)| !higher.is_empty())?;
    let base_header = format!("ops/s T={base}");
    let higher_headers: Vec<String> = higher.iter().map(|t| format!("T={t}")).collect();
    let mut headers = vec!["engine", "workload", "shape", base_header.as_str()];
    headers.extend(higher_headers.iter().map(String::as_str));
    let cells: Vec<Vec<String>> = reads
        .iter()
        .filter(|r| r.threads == base)
        .map(|b| {
            let mut cells = vec![
                b.engine.clone(),
                b.workload.to_owned(),
                b.shape.to_owned(),
                format!("{:.0}", b.ops_per_sec),
            ];
            cells.extend(higher.iter().map(|&t| {
                reads
                    .iter()
                    .find(|r| r.engine == b.engine && r.threads == t && r.same_workload(b))
                    .map_or("-".into(), |r| {
                        format!("{:.2}x", r.ops_per_sec / b.ops_per_sec)
                    })
            }));
            cells
        })
        .collect();
    Some(format!(
        "scaling: ops/s with T threads over ops/s with T={base} (medians; \
         T readers at once, each doing --reads operations; fillthreads: T writers \
         sharing the same puts; fillsync: T writers, each doing --sync-puts)\n{}",
        render(&headers, &cells)
    ))
}

/// Below the table when a scan workload ran.
const SCAN_NOTE: &str = "seekrandombounded, seekempty*, prefix*: probes/op and fpr % count \
                         scan filters (Sift's prefix and range filters, RocksDB's prefix \
                         Bloom; fjall has none), not key filters.\n";

/// Below the table when RocksDB ran (see `super::read`).
const ROCKSDB_NOTE: &str = "rocksdb: probes/op and fpr % come from an untimed pass of each \
                            read workload over a copy of the store with statistics on; \
                            timed runs have them off.\n";

/// Below the table when a threaded write ran.
const WRITES_NOTE: &str = "fillthreads, fillsync: each into a fresh store. stall ms: the \
                           engine's write stall time during the timed puts (Sift: \
                           Db::stats; RocksDB: rocksdb.dbstats' cumulative stall; fjall \
                           counts none: -). w-amp (fillthreads): bytes the process handed \
                           to write(2) (/proc/self/io wchar: log, flushes, compactions, \
                           manifests) from the first put until the flush and compactions \
                           after the fill finished, over the 116 bytes of key and value \
                           per put.\n";

#[cfg(test)]
mod tests {
    use super::*;

    fn row(engine: &str, ops_per_sec: f64) -> Row {
        Row {
            engine: engine.to_owned(),
            workload: "readmissing",
            shape: "loaded",
            threads: 1,
            filters: "key",
            ops_per_sec,
            cpu_ops_per_sec: ops_per_sec,
            probes_per_op: 1.0,
            fpr: Some(0.01),
            filter_bits_per_key: None,
            scan_filter_bits_per_key: None,
            tables: 3,
            disk_bytes: 1 << 20,
            ops_spread: 0.0,
            stall_ms: None,
            write_amp: None,
        }
    }

    #[test]
    fn ratios_against_each_baseline_that_ran() {
        let two = table(&[row("fjall", 100.0), row("sift", 150.0)]);
        assert!(!two.contains("vs rocksdb"), "{two}");
        assert!(two.contains("1.50x"), "{two}");
        let three = table(&[
            row("fjall", 100.0),
            row("rocksdb", 200.0),
            row("sift", 300.0),
        ]);
        assert!(three.contains("vs rocksdb"), "{three}");
        assert!(three.ends_with(ROCKSDB_NOTE) && !two.contains(ROCKSDB_NOTE));
        let sift = three.lines().find(|l| l.starts_with("sift")).unwrap_or("");
        assert!(sift.contains("3.00x") && sift.contains("1.50x"), "{three}");
        let rocksdb = three
            .lines()
            .find(|l| l.starts_with("rocksdb"))
            .unwrap_or("");
        assert!(
            rocksdb.contains("2.00x") && !rocksdb.contains("1.00x"),
            "{three}"
        );
    }

    #[test]
    fn threads_are_shown_compared_alike_and_summarized_when_several_ran() {
        let at = |engine: &str, threads: usize, ops_per_sec: f64| Row {
            threads,
            ..row(engine, ops_per_sec)
        };
        let fill = Row {
            workload: "fillrandom",
            shape: "load",
            ..row("sift", 50.0)
        };
        let one = table(&[row("fjall", 100.0), row("sift", 150.0), fill.clone()]);
        assert!(
            one.lines().next().is_some_and(|h| h.contains("threads")),
            "{one}"
        );
        assert!(scaling(&[row("sift", 150.0), fill.clone()]).is_none());
        assert!(!one.contains("scaling"), "{one}");

        let rows = [
            fill,
            at("fjall", 1, 100.0),
            at("fjall", 2, 180.0),
            at("sift", 1, 150.0),
            at("sift", 2, 240.0),
        ];
        let two = table(&rows);
        // sift at 2 threads against fjall at 2 threads, not at 1.
        let sift2 = two
            .lines()
            .find(|l| l.starts_with("sift") && l.contains(" 240 "))
            .unwrap_or("");
        assert!(sift2.contains("1.33x"), "{two}");
        let summary = scaling(&rows).unwrap_or_default();
        assert!(two.ends_with(&summary), "{two}");
        let lines: Vec<&str> = summary.lines().collect();
        assert!(
            lines[1].contains("ops/s T=1") && lines[1].contains("T=2"),
            "{summary}"
        );
        assert_eq!(
            lines.len(),
            5,
            "title, header, rule, fjall, sift: {summary}"
        );
        assert!(
            lines[3].starts_with("fjall") && lines[3].ends_with("1.80x"),
            "{summary}"
        );
        assert!(
            lines[4].starts_with("sift") && lines[4].ends_with("1.60x"),
            "{summary}"
        );
    }

    #[test]
    fn threaded_writes_show_their_cost_and_scale() {
        let write = |engine: &str, workload: &'static str, threads: usize, ops_per_sec: f64| Row {
            workload,
            shape: "load",
            threads,
            stall_ms: (engine == "sift").then_some(12.0),
            write_amp: (workload == "fillthreads").then_some(3.25),
            ..row(engine, ops_per_sec)
        };
        let reads = table(&[row("fjall", 100.0), row("sift", 150.0)]);
        assert!(!reads.contains("w-amp") && !reads.contains(WRITES_NOTE));
        let rows = [
            Row {
                workload: "fillrandom",
                shape: "load",
                ..row("sift", 50.0)
            },
            write("fjall", "fillsync", 1, 200.0),
            write("fjall", "fillsync", 4, 300.0),
            write("sift", "fillthreads", 1, 100.0),
            write("sift", "fillthreads", 4, 250.0),
        ];
        let out = table(&rows);
        assert!(out.contains("stall ms") && out.contains("w-amp"), "{out}");
        let line = |prefix: &str| {
            out.lines()
                .find(|l| l.starts_with(prefix) && l.contains(" 250 "))
                .unwrap_or("")
        };
        assert!(line("sift").contains(" 12 ") && line("sift").contains(" 3.25 "));
        let fjall = out.lines().find(|l| l.contains("fillsync")).unwrap_or("");
        assert_eq!(
            fjall.matches(" - ").count(),
            4,
            "stall, w-amp, bits/key: {fjall}"
        );
        assert!(out.contains(WRITES_NOTE), "{out}");
        // The single-threaded fill is not summarized; the threaded writes are.
        let summary = scaling(&rows).unwrap_or_default();
        assert!(!summary.contains("fillrandom"), "{summary}");
        let lines: Vec<&str> = summary.lines().collect();
        assert_eq!(lines.len(), 5, "title, header, rule, 2 writes: {summary}");
        assert!(lines[3].contains("fillsync") && lines[3].ends_with("1.50x"));
        assert!(lines[4].contains("fillthreads") && lines[4].ends_with("2.50x"));
    }
}
