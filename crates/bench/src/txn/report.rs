//! Rows of `sift-bench txn`: the printed table and the JSON lines.

use serde::Serialize;

use crate::filters::measure::Spread;
use crate::filters::report::render;

/// One JSON line: one method on one configuration. Exactly these fields.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// `ownset`, `txn` or `validation`.
    pub experiment: String,
    /// `precheck` or `exact` (validation: followed by the shape).
    pub method: String,
    /// Keys in the set / operations of the transaction / keys it read.
    pub ops: u64,
    /// Validation: commits since the snapshot; else 0.
    pub committed: u64,
    /// Median over repetitions of nanoseconds per operation (validation:
    /// per commit).
    pub ns: f64,
    /// Exact checks per operation (validation: per commit).
    pub exact_checks: f64,
    /// Table only: `(max - min) / median` of the repetitions.
    #[serde(skip)]
    pub spread: f64,
}

impl Row {
    /// A row from the per-repetition times.
    pub fn new(
        experiment: &str,
        method: &str,
        ops: u64,
        committed: u64,
        rep_ns: &[f64],
        exact_checks: f64,
    ) -> Self {
        let ns = Spread::of(rep_ns);
        Self {
            experiment: experiment.to_owned(),
            method: method.to_owned(),
            ops,
            committed,
            ns: ns.median,
            spread: ns.relative_range(),
            exact_checks,
        }
    }

    /// One JSON object.
    pub fn json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string(self)?)
    }
}

/// The table; "exact / precheck" is, on each `precheck` row, the time of
/// the matching `exact` row over this one: the pre-check's speed-up.
pub fn table(rows: &[Row]) -> String {
    const HEADERS: [&str; 7] = [
        "experiment",
        "method",
        "ops",
        "committed",
        "ns",
        "exact checks",
        "exact / precheck",
    ];
    let ratio = |row: &Row| -> String {
        let Some(shape) = row.method.strip_prefix("precheck") else {
            return String::new();
        };
        rows.iter()
            .find(|o| {
                o.experiment == row.experiment
                    && o.ops == row.ops
                    && o.committed == row.committed
                    && o.method.strip_prefix("exact") == Some(shape)
            })
            .map_or_else(String::new, |o| format!("{:.2}x", o.ns / row.ns))
    };
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.experiment.clone(),
                r.method.clone(),
                r.ops.to_string(),
                r.committed.to_string(),
                format!("{:.1} ±{:.0}%", r.ns, 100.0 * r.spread),
                format!("{:.3}", r.exact_checks),
                ratio(r),
            ]
        })
        .collect();
    render(&HEADERS, &cells)
}
