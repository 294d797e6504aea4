//! Rows of the report: the printed table and the JSON lines.

use serde::Serialize;

use super::measure::Tally;
use super::store::Config;
use crate::filters::measure::Spread;
use crate::filters::report::render;

/// One JSON line: one searcher (or, in experiment 6, one write run) on one
/// configuration. Exactly these fields, so consumers can rely on the shape;
/// the planner's picks, the no-scan share and the spread are in the human
/// table only.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Experiment number (1 ..= 6).
    pub experiment: u32,
    /// `scan`, `bloom-scan`, `hierarchy`, `flat`, `planner`; experiment 6:
    /// `fillrandom-N` with N value indexes.
    pub method: String,
    /// Entries loaded.
    pub entries: u64,
    /// Tables after the load.
    pub tables: u64,
    /// Hierarchy order `d`.
    pub order: usize,
    /// Leaf filter bits `m`.
    pub leaf_bits: u64,
    /// Distinct values in percent of the entries.
    pub domain_pct: u64,
    /// Inner hierarchy nodes probed per query (mean).
    pub nodes_probed: f64,
    /// Leaf filters probed per query (mean).
    pub leaves_probed: f64,
    /// Leaves answering "maybe" per query (mean).
    pub leaves_positive: f64,
    /// Tables scanned per query (mean).
    pub tables_scanned: f64,
    /// Tables really holding the value per query (mean).
    pub tables_true: f64,
    /// Median over repetitions of the mean milliseconds per query
    /// (experiment 6: per insert, load to settled store).
    pub ms_per_query: f64,
    /// Table only: `(max - min) / median` of the per-repetition times.
    #[serde(skip)]
    pub spread: f64,
    /// Table only: a note (planner picks, no-scan share, inserts/s).
    #[serde(skip)]
    pub note: String,
}

impl Row {
    /// The row of one searcher's `tally` on `config` with `tables` tables.
    pub fn of_queries(
        experiment: u32,
        name: &str,
        config: &Config,
        tables: u64,
        tally: &Tally,
        absent: bool,
    ) -> Self {
        let ms = Spread::of(&tally.rep_ms);
        let picks: Vec<String> = tally
            .picks
            .iter()
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        let mut notes = Vec::new();
        if !picks.is_empty() {
            notes.push(format!("picked {}", picks.join(", ")));
        }
        if absent {
            notes.push(format!(
                "no table scanned in {:.1}%",
                100.0 * tally.no_scan as f64 / tally.queries.max(1) as f64
            ));
        }
        let note = notes.join("; ");
        Self {
            experiment,
            method: name.to_owned(),
            entries: config.entries,
            tables,
            order: config.order,
            leaf_bits: config.leaf_bits,
            domain_pct: config.domain_pct,
            nodes_probed: tally.per_query(tally.nodes_probed),
            leaves_probed: tally.per_query(tally.leaves_probed),
            leaves_positive: tally.per_query(tally.leaves_positive),
            tables_scanned: tally.per_query(tally.tables_scanned),
            tables_true: tally.per_query(tally.tables_true),
            ms_per_query: ms.median,
            spread: ms.relative_range(),
            note,
        }
    }

    /// The row of the write runs with `config.indexes` indexes: `rep_ms`
    /// holds milliseconds per insert, one per repetition.
    pub fn of_writes(config: &Config, tables: u64, rep_ms: &[f64]) -> Self {
        let ms = Spread::of(rep_ms);
        Self {
            experiment: 6,
            method: format!("fillrandom-{}", config.indexes),
            entries: config.entries,
            tables,
            order: config.order,
            leaf_bits: config.leaf_bits,
            domain_pct: config.domain_pct,
            nodes_probed: 0.0,
            leaves_probed: 0.0,
            leaves_positive: 0.0,
            tables_scanned: 0.0,
            tables_true: 0.0,
            ms_per_query: ms.median,
            spread: ms.relative_range(),
            note: format!("{:.0} inserts/s", 1e3 / ms.median),
        }
    }

    /// One JSON object.
    pub fn json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string(self)?)
    }
}

/// The table: one line per row; "vs scan" is scan's time over the row's
/// for the same experiment and configuration (experiment 6: the row's
/// throughput over the one without indexes).
pub fn table(rows: &[Row]) -> String {
    const HEADERS: [&str; 16] = [
        "exp",
        "method",
        "entries",
        "tables",
        "d",
        "m bits",
        "domain %",
        "nodes",
        "leaves probed",
        "leaves +",
        "tables scanned",
        "tables true",
        "ms/query",
        "vs scan",
        "spread",
        "note",
    ];
    let same = |a: &Row, b: &Row| {
        a.experiment == b.experiment
            && a.entries == b.entries
            && a.order == b.order
            && a.leaf_bits == b.leaf_bits
            && a.domain_pct == b.domain_pct
    };
    let base = |row: &Row| {
        let name = if row.experiment == 6 {
            "fillrandom-0"
        } else {
            "scan"
        };
        rows.iter()
            .find(|r| r.method == name && same(r, row))
            .map(|r| r.ms_per_query)
    };
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.experiment.to_string(),
                r.method.clone(),
                r.entries.to_string(),
                r.tables.to_string(),
                r.order.to_string(),
                r.leaf_bits.to_string(),
                r.domain_pct.to_string(),
                format!("{:.1}", r.nodes_probed),
                format!("{:.1}", r.leaves_probed),
                format!("{:.1}", r.leaves_positive),
                format!("{:.1}", r.tables_scanned),
                format!("{:.1}", r.tables_true),
                format!("{:.3}", r.ms_per_query),
                base(r)
                    .filter(|&b| r.ms_per_query > 0.0 && b > 0.0)
                    .map_or("-".into(), |b| format!("{:.1}x", b / r.ms_per_query)),
                format!("{:.0}%", r.spread * 100.0),
                r.note.clone(),
            ]
        })
        .collect();
    render(&HEADERS, &cells)
}
