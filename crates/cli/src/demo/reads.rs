//! Phases 2 and 3: point lookups of present and missing keys, and range
//! scans, each with the engine's counters read before and after.

use std::time::Instant;

use siftdb::{Db, Stats};

use super::rng::SplitMix64;
use crate::error::{Failure, Outcome};

/// What one batch of point lookups did (counter deltas over the batch).
#[derive(Debug)]
pub struct LookupFigures {
    /// `present` or `missing`.
    pub keys: &'static str,
    /// Lookups made.
    pub lookups: u64,
    /// Keys found.
    pub found: u64,
    /// Mean wall time per lookup.
    pub nanos_per_lookup: f64,
    /// Key filters consulted.
    pub filter_probes: u64,
    /// Filters that answered "not in this table".
    pub filter_negatives: u64,
    /// Filters that answered "maybe" for a table without the key.
    pub false_positives: u64,
    /// Data blocks read (cache hits included).
    pub data_blocks_read: u64,
}

/// Looks up every key of `keys` (all expected `present`, or all missing).
pub fn lookups(db: &Db, keys: &[String], present: bool) -> Outcome<LookupFigures> {
    let before = db.stats();
    let started = Instant::now();
    let mut found = 0u64;
    for key in keys {
        found += u64::from(db.get(key)?.is_some());
    }
    let elapsed = started.elapsed();
    let after = db.stats();
    let figures = LookupFigures {
        keys: if present { "present" } else { "missing" },
        lookups: keys.len() as u64,
        found,
        nanos_per_lookup: elapsed.as_nanos() as f64 / keys.len().max(1) as f64,
        filter_probes: delta(&before, &after, |s| s.filter_probes),
        filter_negatives: delta(&before, &after, |s| s.filter_negatives),
        false_positives: delta(&before, &after, |s| s.filter_false_positives),
        data_blocks_read: delta(&before, &after, |s| s.data_blocks_read),
    };
    let expected = if present { figures.lookups } else { 0 };
    if found != expected {
        return Err(Failure::storage(format!(
            "{} of {} {} keys were found (expected {expected}): the store lost or invented keys",
            found, figures.lookups, figures.keys
        )));
    }
    Ok(figures)
}

/// Keys that are not stored but fall among stored ones: each sample's
/// passenger number replaced by 9 (parties have at most 4 passengers), so
/// the lookup reaches the filter of the table whose key range covers it.
pub fn missing_keys(samples: &[String]) -> Vec<String> {
    samples
        .iter()
        .map(|key| match key.rsplit_once('-') {
            Some((booking, _)) => format!("{booking}-9"),
            None => format!("{key}-9"),
        })
        .collect()
}

/// `samples` in a seeded random order, so lookups do not walk the key
/// space in order (which would flatter the block cache).
pub fn shuffled(samples: &[String], seed: u64) -> Vec<String> {
    let mut keys = samples.to_vec();
    SplitMix64::new(seed).shuffle(&mut keys);
    keys
}

/// What a set of range scans did.
#[derive(Debug)]
pub struct RangeFigures {
    /// What each scan covers.
    pub what: &'static str,
    /// An example prefix.
    pub example: String,
    /// Scans made.
    pub scans: u64,
    /// Records returned, over all scans.
    pub records: u64,
    /// Mean wall time per scan.
    pub nanos_per_scan: f64,
}

/// Scans every prefix of `prefixes` to its end, counting records.
pub fn ranges(db: &Db, what: &'static str, prefixes: &[String]) -> Outcome<RangeFigures> {
    let started = Instant::now();
    let mut records = 0u64;
    for prefix in prefixes {
        for item in db.prefix(prefix) {
            item?;
            records += 1;
        }
    }
    let elapsed = started.elapsed();
    Ok(RangeFigures {
        what,
        example: prefixes.first().cloned().unwrap_or_default(),
        scans: prefixes.len() as u64,
        records,
        nanos_per_scan: elapsed.as_nanos() as f64 / prefixes.len().max(1) as f64,
    })
}

/// The first `parts` `/`-separated parts of `key`, with the trailing `/`:
/// `flight/2026-12-03/` (one day) or `flight/2026-12-03/UA0123/` (one
/// flight on one day).
pub fn key_prefix(key: &str, parts: usize) -> String {
    let mut prefix: String = key.split('/').take(parts).collect::<Vec<_>>().join("/");
    prefix.push('/');
    prefix
}

/// `after.f - before.f`.
fn delta(before: &Stats, after: &Stats, f: fn(&Stats) -> u64) -> u64 {
    f(after).saturating_sub(f(before))
}
