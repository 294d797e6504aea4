//! Measuring the planner's unit costs (`plan.rs`) on the database itself,
//! on the first search after its tables change.
//!
//! A few sample blocks (the middle block of up to [`SAMPLE_TABLES`] tables
//! spread over the version) are read from their files, their entries
//! decoded and extracted, the same key range scanned through the merged
//! iterator, and some of their keys validated, each timed; the leaf
//! structures are probed with an absent value by every method. Each
//! measurement is taken twice and the faster kept, so the figures are
//! those of warm code (and of the OS cache, where the store's files live
//! in practice). The whole costs tens of microseconds.

use std::hint::black_box;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Instant;

use sift_filter::KeyHash;
use sift_value_index::{Method, ProbeStats};

use super::find::{Hit, Source, has_value, shadowed};
use super::leaves::IndexState;
use super::plan::Costs;
use crate::db::counters::Shard;
use crate::db::{Inner, SuperVersion};
use crate::key::SeqNo;
use crate::value_def::IndexRecord;
use crate::version::LiveTable;

/// Tables sampled.
const SAMPLE_TABLES: usize = 4;

/// Keys of a sample block validated.
const SAMPLE_VALIDATIONS: usize = 16;

/// A value no extractor yields: every comparison fails, as for most
/// entries of a real search.
const ABSENT: &[u8] = b"\xffsift calibration";

/// Sums of time and units, turned into a mean per unit.
#[derive(Default)]
struct Mean {
    nanos: f64,
    units: f64,
}

impl Mean {
    fn add(&mut self, nanos: f64, units: usize) {
        self.nanos += nanos;
        self.units += units as f64;
    }

    /// The mean per unit, or `fallback` without a unit measured.
    fn or(&self, fallback: f64) -> f64 {
        if self.units > 0.0 {
            self.nanos / self.units
        } else {
            fallback
        }
    }
}

/// The faster of two runs of `f`, in nanoseconds, with its result.
fn timed<T>(mut f: impl FnMut() -> T) -> (f64, T) {
    let start = Instant::now();
    let _ = black_box(f());
    let first = start.elapsed();
    let start = Instant::now();
    let out = black_box(f());
    (start.elapsed().min(first).as_nanos() as f64, out)
}

/// The costs of searching `record` in `current`, measured now; assumed
/// figures ([`Costs::ASSUMED`]) stand for what cannot be measured (no
/// table, no leaf).
pub(super) fn measure(
    current: &SuperVersion,
    record: &IndexRecord,
    state: &IndexState,
    seq: SeqNo,
) -> Costs {
    let assumed = Costs::ASSUMED;
    let mut costs = Costs {
        probe: probe_costs(state),
        ..assumed
    };
    let mut placed: Vec<(usize, usize, &Arc<LiveTable>)> = Vec::new();
    for (level, runs) in current.version.levels.iter().enumerate() {
        for (run, tables) in runs.runs.iter().enumerate() {
            for table in tables.tables() {
                if table.meta.entries > 0 {
                    placed.push((level, run, table));
                }
            }
        }
    }
    let picks = placed.len().min(SAMPLE_TABLES);
    let (mut block, mut entry, mut scan, mut validate) = Default::default();
    for i in 0..picks {
        let Some(&(level, run, table)) = placed.get(i * placed.len() / picks) else {
            continue;
        };
        sample(
            current,
            record,
            (level, run, table),
            seq,
            [&mut block, &mut entry, &mut scan, &mut validate],
        );
    }
    costs.block_ns = block.or(assumed.block_ns);
    costs.entry_ns = entry.or(assumed.entry_ns);
    costs.scan_entry_ns = scan.or(assumed.scan_entry_ns);
    costs.validate_ns = validate.or(assumed.validate_ns);
    costs
}

/// Measures the middle block of one table: read, extracted, scanned,
/// validated.
fn sample(
    current: &SuperVersion,
    record: &IndexRecord,
    (level, run, live): (usize, usize, &Arc<LiveTable>),
    seq: SeqNo,
    [block, entry, scan, validate]: [&mut Mean; 4],
) {
    // A table that cannot be read gives no sample.
    let Ok(table) = live.table_arc() else {
        return;
    };
    let at = table.data_blocks() / 2;
    let (nanos, read) = timed(|| table.read_data_block(at).is_ok());
    if !read {
        return;
    }
    block.add(nanos, 1);
    let mut keys: Vec<(Vec<u8>, SeqNo)> = Vec::new();
    let (nanos, entries) = timed(|| {
        keys.clear();
        let mut entries = 0;
        let visited = table.for_each_in_block(at, |key, value| {
            entries += 1;
            black_box(has_value(record, value, ABSENT));
            if keys.len() < SAMPLE_VALIDATIONS && key.seq <= seq {
                keys.push((key.user_key.to_vec(), key.seq));
            }
        });
        visited.map_or(0, |()| entries)
    });
    entry.add(nanos, entries);
    let (Some((first, _)), Some(last)) = (keys.first(), table.block_last_user_key(at)) else {
        return;
    };
    let bounds = (Bound::Included(first.clone()), Bound::Included(last));
    let (nanos, scanned) = timed(|| {
        let mut scanned = 0;
        for (_, value) in Inner::iter_in(current, bounds.clone(), seq).flatten() {
            scanned += 1;
            black_box(has_value(record, &value, ABSENT));
        }
        scanned
    });
    scan.add(nanos, scanned);
    let hits: Vec<Hit> = keys
        .into_iter()
        .map(|(key, seq)| Hit {
            key,
            value: Vec::new(),
            seq,
            source: Source::Table {
                level,
                run,
                check_own: false,
            },
        })
        .collect();
    let mut scratch = Vec::new();
    // A measurement, not a lookup: its filter probes stay out of the stats.
    let uncounted = Shard::default();
    let (nanos, ()) = timed(|| {
        for hit in &hits {
            black_box(shadowed(current, hit, seq, None, &uncounted, &mut scratch).is_ok());
        }
    });
    validate.add(nanos, hits.len());
}

/// The leaf structures' probe costs: each class searched for an absent
/// value by every method, per leaf, node and word probed.
fn probe_costs(state: &IndexState) -> sift_value_index::planner::CostModel {
    let mut model = Costs::ASSUMED.probe;
    let hash = KeyHash::of(ABSENT);
    let mut leaf = Mean::default();
    let mut node = Mean::default();
    let mut word = Mean::default();
    for class in state.class_indexes() {
        for method in Method::PROBES {
            let (nanos, stats) = timed(|| {
                let mut stats = ProbeStats::default();
                black_box(class.search(method, hash, &mut stats));
                stats
            });
            match method {
                Method::BloomScan => leaf.add(nanos, stats.leaves_probed as usize),
                Method::Hierarchy => node.add(
                    nanos,
                    (stats.inner_nodes_probed + stats.leaves_probed) as usize,
                ),
                Method::Flat => word.add(nanos, stats.words_anded as usize),
                Method::Scan => {}
            }
        }
    }
    model.leaf_probe_ns = leaf.or(model.leaf_probe_ns);
    model.inner_probe_ns = node.or(model.inner_probe_ns);
    model.flat_word_ns = word.or(model.flat_word_ns);
    model
}
