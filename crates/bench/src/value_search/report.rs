//! Rows of the report: the two printed tables (searches, loads) and the
//! JSON lines.

use serde::Serialize;

use super::measure::{Contender, Tally};
use super::stores::{Footprint, Store};
use crate::filters::measure::Spread;
use crate::filters::report::render;

/// One JSON line. `kind` is `query` or `load`; the fields of each kind are
/// fixed (absent counters are `null`), so consumers can rely on them.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Row {
    /// One contender on one query class of one shape and configuration.
    Query(QueryRow),
    /// One load of one shape and configuration.
    Load(LoadRow),
}

impl Row {
    /// One JSON object.
    pub fn json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string(self)?)
    }
}

/// Where a row was measured.
#[derive(Clone, Debug, Serialize)]
pub struct Setting {
    /// Shape name.
    pub shape: String,
    /// Table configuration: `128k` or `default`.
    pub config: String,
    /// Records loaded (distinct keys).
    pub records: u64,
}

/// A search row.
#[derive(Clone, Debug, Serialize)]
pub struct QueryRow {
    /// Shape, configuration, records.
    #[serde(flatten)]
    pub setting: Setting,
    /// Contender name.
    pub method: String,
    /// `uniform`, `frequency` or `absent`.
    pub class: String,
    /// Entries in the searched store's tables (the exact index's store
    /// holds its index entries too).
    pub entries: u64,
    /// Tables of the searched store.
    pub tables: u64,
    /// Median over repetitions of the mean milliseconds per query.
    pub ms_per_query: f64,
    /// `(max - min) / median` of the repetitions.
    pub spread: f64,
    /// Scan's median over this row's.
    pub vs_scan: Option<f64>,
    /// The exact index's median over this row's.
    pub vs_exact: Option<f64>,
    /// Mean leaves answering "maybe" per query.
    pub leaves_positive: Option<f64>,
    /// Mean tables read per query.
    pub tables_read: Option<f64>,
    /// Mean data blocks read per query.
    pub blocks_read: Option<f64>,
    /// Mean blocks read that held the value.
    pub blocks_matched: Option<f64>,
    /// Mean keys returned per query.
    pub results: f64,
    /// Planner: share of queries where it read the candidate blocks (the
    /// rest it answered with a scan).
    pub planner_read_candidates: Option<f64>,
    /// Planner: share of queries where it read the memtables and the
    /// newest runs whole, and the other runs' candidate blocks.
    pub planner_read_whole: Option<f64>,
    /// Absent values: share of queries that read no data block.
    pub no_block_share: Option<f64>,
    /// Exact index: mean index entries read per query.
    pub index_entries: Option<f64>,
}

impl QueryRow {
    /// The row of `contender`'s `tally` on a store of `entries` entries in
    /// `tables` tables; `scan_ms` and `exact_ms` are those contenders'
    /// medians on the same class.
    #[expect(
        clippy::too_many_arguments,
        reason = "one row gathers what one search run measured"
    )]
    pub fn new(
        setting: &Setting,
        contender: Contender,
        class: &str,
        footprint: &Footprint,
        tally: &Tally,
        scan_ms: f64,
        exact_ms: f64,
        absent: bool,
    ) -> Self {
        let ms = Spread::of(&tally.rep_ms);
        let ratio = |base: f64| (ms.median > 0.0 && base > 0.0).then(|| base / ms.median);
        let filters = contender.uses_filters();
        let counter = |sum: u64| filters.then(|| tally.mean(sum));
        Self {
            setting: setting.clone(),
            method: contender.name().to_owned(),
            class: class.to_owned(),
            entries: footprint.entries,
            tables: footprint.tables(),
            ms_per_query: ms.median,
            spread: ms.relative_range(),
            vs_scan: ratio(scan_ms),
            vs_exact: ratio(exact_ms),
            leaves_positive: counter(tally.leaves_positive),
            tables_read: counter(tally.tables_read),
            blocks_read: counter(tally.blocks_read),
            blocks_matched: counter(tally.blocks_matched),
            results: tally.mean(tally.results),
            planner_read_candidates: (contender == Contender::Planner)
                .then(|| tally.mean(tally.read_candidates)),
            planner_read_whole: (contender == Contender::Planner)
                .then(|| tally.mean(tally.read_whole)),
            no_block_share: (absent && filters).then(|| tally.mean(tally.no_block)),
            index_entries: (!filters).then(|| tally.mean(tally.index_entries)),
        }
    }
}

/// The repeated loads of one store: seconds per repetition and the size
/// of the last one, as loaded and fully compacted.
pub struct Loads<'a> {
    /// Seconds of each repetition's load.
    pub seconds: &'a [f64],
    /// The kept store's size after the load (as searched).
    pub footprint: &'a Footprint,
    /// Its size after a full compaction.
    pub compacted: &'a Footprint,
}

/// A load row.
#[derive(Clone, Debug, Serialize)]
pub struct LoadRow {
    /// Shape, configuration, records.
    #[serde(flatten)]
    pub setting: Setting,
    /// `no-index`, `value-index` or `exact-index`.
    pub store: String,
    /// Writes (records plus rewrites).
    pub writes: u64,
    /// Tables after the load.
    pub tables: u64,
    /// Entries in tables after the load.
    pub entries: u64,
    /// Median over repetitions of the load's seconds: writes, final flush,
    /// wait for compactions.
    pub seconds: f64,
    /// `(max - min) / median` of the repetitions.
    pub spread: f64,
    /// Writes per second (at the median).
    pub inserts_per_s: f64,
    /// This store's throughput over the no-index store's.
    pub vs_no_index: f64,
    /// Bytes of table files after the load (as searched).
    pub disk_bytes: u64,
    /// Bytes of table files after a full compaction.
    pub compacted_disk_bytes: u64,
    /// Compacted table bytes beyond the no-index store's compacted bytes.
    pub extra_disk_bytes: i64,
    /// Filter bytes pinned in memory beyond the no-index store's, both
    /// compacted: the value index's leaves and block filters, or the exact
    /// index's extra key filter bytes.
    pub extra_memory_bytes: i64,
    /// Value index: leaf bits per distinct value of a table.
    pub leaf_bits_per_value: Option<f64>,
    /// Value index: measured leaf false-positive rate.
    pub measured_leaf_fpr: Option<f64>,
    /// Value index: leaf size classes.
    pub leaf_classes: Option<usize>,
    /// Value index: block filter bits per distinct value of a table.
    pub block_filter_bits_per_value: Option<f64>,
    /// Value index: milliseconds of the first `Db::find` after the load
    /// (it builds the search structures and measures the planner's costs;
    /// the timed searches come after it).
    pub first_find_ms: Option<f64>,
}

impl LoadRow {
    /// The row of `store`'s `loads` against the no-index store's (`plain`).
    pub fn new(
        setting: &Setting,
        store: Store,
        writes: u64,
        loads: &Loads<'_>,
        plain: &Loads<'_>,
        first_find_ms: Option<f64>,
    ) -> Self {
        let footprint = loads.footprint;
        let seconds = Spread::of(loads.seconds);
        let plain_seconds = Spread::of(plain.seconds).median;
        let index = footprint.index.as_ref();
        let compacted = loads.compacted;
        let extra_memory = match &compacted.index {
            Some(i) => (i.leaf_bytes + i.block_filter_bytes) as i64,
            None => compacted.key_filter_bytes as i64 - plain.compacted.key_filter_bytes as i64,
        };
        let median = seconds.median.max(1e-9);
        Self {
            setting: setting.clone(),
            store: store.name().to_owned(),
            writes,
            tables: footprint.tables(),
            entries: footprint.entries,
            seconds: seconds.median,
            spread: seconds.relative_range(),
            inserts_per_s: writes as f64 / median,
            vs_no_index: plain_seconds / median,
            disk_bytes: footprint.disk_bytes,
            compacted_disk_bytes: compacted.disk_bytes,
            extra_disk_bytes: compacted.disk_bytes as i64 - plain.compacted.disk_bytes as i64,
            extra_memory_bytes: extra_memory,
            leaf_bits_per_value: index.map(|i| i.leaf_bits_per_value),
            measured_leaf_fpr: index.map(|i| i.measured_leaf_fpr),
            leaf_classes: index.map(|i| i.leaf_classes),
            block_filter_bits_per_value: index.map(|i| i.block_filter_bits_per_value),
            first_find_ms,
        }
    }
}

/// Both tables: searches, then loads.
pub fn tables(rows: &[Row]) -> String {
    let queries: Vec<&QueryRow> = rows
        .iter()
        .filter_map(|r| match r {
            Row::Query(q) => Some(q),
            Row::Load(_) => None,
        })
        .collect();
    let loads: Vec<&LoadRow> = rows
        .iter()
        .filter_map(|r| match r {
            Row::Load(l) => Some(l),
            Row::Query(_) => None,
        })
        .collect();
    format!(
        "Searches\n\n{}\nLoads\n\n{}",
        query_table(&queries),
        load_table(&loads)
    )
}

fn opt(value: Option<f64>, digits: usize) -> String {
    value.map_or("-".into(), |v| format!("{v:.digits$}"))
}

fn times(value: Option<f64>) -> String {
    value.map_or("-".into(), |v| {
        if v >= 10.0 {
            format!("{v:.0}x")
        } else {
            format!("{v:.2}x")
        }
    })
}

fn pct(value: Option<f64>) -> Option<String> {
    value.map(|v| format!("{:.0}%", v * 100.0))
}

fn query_table(rows: &[&QueryRow]) -> String {
    const HEADERS: [&str; 16] = [
        "shape",
        "config",
        "method",
        "class",
        "entries",
        "tables",
        "ms/query",
        "vs scan",
        "vs exact",
        "spread",
        "leaves +",
        "tables read",
        "blocks read",
        "blocks matched",
        "results",
        "note",
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut notes = Vec::new();
            if let Some(p) = pct(r.planner_read_candidates) {
                notes.push(format!("read candidates in {p}"));
            }
            if let Some(p) = pct(r.planner_read_whole.filter(|&share| share > 0.0)) {
                notes.push(format!("newest read whole in {p}"));
            }
            if let Some(p) = pct(r.no_block_share) {
                notes.push(format!("no block read in {p}"));
            }
            if let Some(n) = r.index_entries {
                notes.push(format!("{n:.1} index entries"));
            }
            vec![
                r.setting.shape.clone(),
                r.setting.config.clone(),
                r.method.clone(),
                r.class.clone(),
                r.entries.to_string(),
                r.tables.to_string(),
                format!("{:.3}", r.ms_per_query),
                times(r.vs_scan),
                times(r.vs_exact),
                format!("{:.0}%", r.spread * 100.0),
                opt(r.leaves_positive, 1),
                opt(r.tables_read, 1),
                opt(r.blocks_read, 1),
                opt(r.blocks_matched, 1),
                format!("{:.1}", r.results),
                notes.join("; "),
            ]
        })
        .collect();
    render(&HEADERS, &cells)
}

fn load_table(rows: &[&LoadRow]) -> String {
    const HEADERS: [&str; 15] = [
        "shape",
        "config",
        "store",
        "writes",
        "tables",
        "entries",
        "seconds",
        "spread",
        "writes/s",
        "vs no index",
        "disk MiB",
        "compacted MiB",
        "extra disk",
        "extra memory",
        "value index",
    ];
    let mib = |b: i64| b as f64 / f64::from(1 << 20);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let index = match (r.leaf_bits_per_value, r.measured_leaf_fpr) {
                (Some(bits), Some(fpr)) => format!(
                    "leaves {bits:.1} bits/value, FPR {:.2}%, {} classes; blocks {:.1} bits/value; first find {:.1} ms",
                    fpr * 100.0,
                    r.leaf_classes.unwrap_or(0),
                    r.block_filter_bits_per_value.unwrap_or(0.0),
                    r.first_find_ms.unwrap_or(0.0)
                ),
                _ => String::new(),
            };
            vec![
                r.setting.shape.clone(),
                r.setting.config.clone(),
                r.store.clone(),
                r.writes.to_string(),
                r.tables.to_string(),
                r.entries.to_string(),
                format!("{:.2}", r.seconds),
                format!("{:.0}%", r.spread * 100.0),
                format!("{:.0}", r.inserts_per_s),
                format!("{:.2}x", r.vs_no_index),
                format!("{:.2}", mib(r.disk_bytes as i64)),
                format!("{:.2}", mib(r.compacted_disk_bytes as i64)),
                format!(
                    "{:+.2} MiB ({:+.0}%)",
                    mib(r.extra_disk_bytes),
                    100.0 * r.extra_disk_bytes as f64
                        / (r.compacted_disk_bytes as i64 - r.extra_disk_bytes).max(1) as f64
                ),
                format!("{:+.1} KiB", r.extra_memory_bytes as f64 / 1024.0),
                index,
            ]
        })
        .collect();
    render(&HEADERS, &cells)
}
