//! Samples, their medians over repetitions, and the printed table / JSON.

use std::path::Path;

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
    tables: u64,
    disk_bytes: u64,
}

impl Sample {
    /// Derives the figures of `run`. `all_absent`: every lookup was for an
    /// absent key, so every filter "maybe" was a false positive (how fjall's
    /// FPR is measured; Sift counts its false positives itself).
    pub fn of(run: &Run, engine: &dyn Engine, dir: &Path, all_absent: bool) -> Self {
        let ops = run.ops as f64;
        let per_sec = |d: std::time::Duration| {
            let secs = d.as_secs_f64();
            if secs > 0.0 { ops / secs } else { f64::NAN }
        };
        let f = run.filters;
        let fpr = match f.false_positives {
            Some(fp) if fp + f.negatives > 0 => Some(fp as f64 / (fp + f.negatives) as f64),
            None if all_absent && f.probes > 0 => {
                Some((f.probes - f.negatives) as f64 / f.probes as f64)
            }
            _ => None,
        };
        let shape = engine.shape();
        Self {
            ops_per_sec: per_sec(run.wall),
            cpu_ops_per_sec: per_sec(run.cpu),
            probes_per_op: if ops > 0.0 {
                f.probes as f64 / ops
            } else {
                0.0
            },
            fpr,
            filter_bits_per_key: shape.filter_bits_per_key,
            tables: shape.tables,
            disk_bytes: disk_bytes(dir),
        }
    }
}

/// Medians over repetitions of one (engine, workload, shape).
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    engine: String,
    workload: &'static str,
    shape: &'static str,
    ops_per_sec: f64,
    cpu_ops_per_sec: f64,
    probes_per_op: f64,
    fpr: Option<f64>,
    filter_bits_per_key: Option<f64>,
    tables: u64,
    disk_bytes: u64,
    /// `(max - min) / median` of ops/s over repetitions: the noise.
    ops_spread: f64,
}

impl Row {
    /// Medians of `samples`.
    pub fn summarize(engine: &str, workload: Workload, shape: Shape, samples: &[Sample]) -> Self {
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
            ops_per_sec: ops.median,
            cpu_ops_per_sec: median(|s| s.cpu_ops_per_sec),
            probes_per_op: median(|s| s.probes_per_op),
            fpr: optional(|s| s.fpr),
            filter_bits_per_key: optional(|s| s.filter_bits_per_key),
            tables: median(|s| s.tables as f64) as u64,
            disk_bytes: median(|s| s.disk_bytes as f64) as u64,
            ops_spread: ops.relative_range(),
        }
    }

    /// One JSON object.
    pub fn json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string(self)?)
    }
}

/// The table: one line per row, with each engine's ops/s over fjall's for
/// the same workload and shape.
pub fn table(rows: &[Row]) -> String {
    const HEADERS: [&str; 12] = [
        "engine",
        "workload",
        "shape",
        "ops/s",
        "vs fjall",
        "ops/cpu-s",
        "spread",
        "probes/op",
        "fpr %",
        "bits/key",
        "tables",
        "disk MiB",
    ];
    let fjall = |row: &Row| {
        rows.iter()
            .find(|r| r.engine == "fjall" && r.workload == row.workload && r.shape == row.shape)
            .map(|r| r.ops_per_sec)
    };
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.engine.clone(),
                r.workload.to_owned(),
                r.shape.to_owned(),
                format!("{:.0}", r.ops_per_sec),
                fjall(r)
                    .filter(|_| r.engine != "fjall")
                    .map_or("".into(), |f| format!("{:.2}x", r.ops_per_sec / f)),
                format!("{:.0}", r.cpu_ops_per_sec),
                format!("{:.0}%", r.ops_spread * 100.0),
                format!("{:.2}", r.probes_per_op),
                r.fpr.map_or("-".into(), |p| format!("{:.3}", p * 100.0)),
                r.filter_bits_per_key
                    .map_or("-".into(), |b| format!("{b:.2}")),
                r.tables.to_string(),
                format!("{:.1}", r.disk_bytes as f64 / (1 << 20) as f64),
            ]
        })
        .collect();
    render(&HEADERS, &cells)
}
