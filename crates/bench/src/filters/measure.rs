//! Timing one contender once, and summarising repetitions.
//!
//! What is timed, per repetition and contender (wall clock, `Instant`):
//! - **build**: from the key bytes to a queryable filter: allocation, one
//!   hash per key, insertion, and any finishing pass (e.g. a static filter's
//!   construction from buffered hashes). Divided by `n`.
//! - **positive query**: `count_contained` over all `n` members (hash +
//!   query per key), divided by `n`. The count also gives false negatives.
//! - **negative query**: `count_contained` over all non-member probes,
//!   divided by their number. The count gives the false positives.
//! - **negative probe**: `count_prehashed` over the same probes hashed
//!   before the timer starts, where the filter can take a hash: the
//!   negative query less its hash. Its count must equal the query's.
//!
//! Queries run back to back over independent keys, so this is throughput
//! (the CPU overlaps cache misses of neighbouring queries), as in RocksDB's
//! `filter_bench`, not the latency of one isolated query.

use super::contenders::{Contender, Params, Prehashed};
use super::keys::KeySet;
use anyhow::ensure;
use std::hint::black_box;
use std::time::Instant;

/// One repetition of one contender.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Build time, ns per member key.
    pub build_ns_per_key: f64,
    /// Positive query time, ns per member.
    pub query_pos_ns: f64,
    /// Negative query time, ns per probe.
    pub query_neg_ns: f64,
    /// Negative query time on hashes computed beforehand, ns per probe.
    pub probe_neg_ns: Option<f64>,
    /// Members the filter rejected.
    pub false_negatives: u64,
    /// Probes the filter accepted.
    pub false_positives: u64,
    /// Memory of the filter's data.
    pub size_bytes: usize,
    /// The formula's FPR for the built shape, if the kind has one.
    pub expected_fpr: Option<f64>,
    /// [`Built::detail`](super::contenders::Built::detail) of this build.
    pub detail: String,
}

/// Builds `contender` from `members` and queries every member and probe,
/// then every probe again from `hashed` (the probes' hashes).
pub fn run_once(
    contender: &dyn Contender,
    params: &Params,
    members: &KeySet,
    probes: &KeySet,
    hashed: &Prehashed,
) -> anyhow::Result<Sample> {
    let start = Instant::now();
    let built = contender.build(black_box(members), params)?;
    let built = black_box(built);
    let build = start.elapsed();

    let start = Instant::now();
    let hits = black_box(built.count_contained(black_box(members)));
    let pos = start.elapsed();

    let start = Instant::now();
    let false_positives = black_box(built.count_contained(black_box(probes)));
    let neg = start.elapsed();

    let start = Instant::now();
    let prehashed = black_box(built.count_prehashed(black_box(hashed)));
    let probe = start.elapsed();
    if let Some(hits) = prehashed {
        ensure!(
            hits == false_positives,
            "{} accepted {hits} probes by hash and {false_positives} by key",
            contender.name()
        );
    }

    Ok(Sample {
        build_ns_per_key: per(build.as_nanos(), members.len()),
        query_pos_ns: per(pos.as_nanos(), members.len()),
        query_neg_ns: per(neg.as_nanos(), probes.len()),
        probe_neg_ns: prehashed.map(|_| per(probe.as_nanos(), probes.len())),
        false_negatives: members.len() as u64 - hits,
        false_positives,
        size_bytes: built.size_bytes(),
        expected_fpr: built.expected_fpr(),
        detail: built.detail(),
    })
}

/// The hashing floor: ns per key of `KeyHash::of` and of XXH3-64 alone over
/// `keys`, with the same loop shape as the queries. Every query time in the
/// table includes one of these.
pub fn hash_floor(keys: &KeySet) -> (f64, f64) {
    let start = Instant::now();
    let mut acc = 0u64;
    for key in black_box(keys).iter() {
        // Both halves, as the filters use them: folding only one would let
        // the compiler skip the other's arithmetic.
        let hash = sift_filter::KeyHash::of(key);
        acc ^= hash.lo() ^ hash.hi();
    }
    black_box(acc);
    let sift = per(start.elapsed().as_nanos(), keys.len());

    let start = Instant::now();
    let mut acc = 0u64;
    for key in black_box(keys).iter() {
        acc ^= xxhash_rust::xxh3::xxh3_64(key);
    }
    black_box(acc);
    (sift, per(start.elapsed().as_nanos(), keys.len()))
}

fn per(nanos: u128, count: usize) -> f64 {
    nanos as f64 / count.max(1) as f64
}

/// Median, minimum and maximum of one timing over the repetitions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// Middle value (mean of the two middle values for an even count).
    pub median: f64,
    /// Fastest repetition.
    pub min: f64,
    /// Slowest repetition.
    pub max: f64,
}

impl Spread {
    /// The spread of `values`; all zero for an empty slice.
    pub fn of(values: &[f64]) -> Self {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let (Some(&min), Some(&max)) = (sorted.first(), sorted.last()) else {
            return Self {
                median: 0.0,
                min: 0.0,
                max: 0.0,
            };
        };
        let mid = sorted.len() / 2;
        let median = if sorted.len() % 2 == 1 {
            sorted[mid]
        } else {
            (sorted[mid - 1] + sorted[mid]) / 2.0
        };
        Self { median, min, max }
    }

    /// `(max - min) / median`: how noisy the repetitions were.
    pub fn relative_range(&self) -> f64 {
        if self.median > 0.0 {
            (self.max - self.min) / self.median
        } else {
            0.0
        }
    }
}

/// All repetitions of one contender, summarised.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// The contender's name.
    pub filter: &'static str,
    /// One of Sift's filters.
    pub ours: bool,
    /// Member keys.
    pub n: usize,
    /// Measured memory: `size_bytes · 8 / n`.
    pub bits_per_key: f64,
    /// False positives over all probes of all repetitions.
    pub fpr: f64,
    /// What the kind's formula predicts, if it has one.
    pub expected_fpr: Option<f64>,
    /// The last repetition's [`Sample::detail`].
    pub detail: String,
    /// The most false negatives any repetition saw.
    pub false_negatives: u64,
    /// Build time, ns per key.
    pub build_ns_per_key: Spread,
    /// Positive query time, ns.
    pub query_pos_ns: Spread,
    /// Negative query time, ns.
    pub query_neg_ns: Spread,
    /// Negative query time on prehashed probes, ns, where measured.
    pub probe_neg_ns: Option<Spread>,
}

/// Summarises the `samples` of one contender; `None` if there are none.
pub fn summarize(
    filter: &'static str,
    ours: bool,
    n: usize,
    probes: usize,
    samples: &[Sample],
) -> Option<Summary> {
    let last = samples.last()?;
    let timings = |f: fn(&Sample) -> f64| Spread::of(&samples.iter().map(f).collect::<Vec<_>>());
    let false_positives: u64 = samples.iter().map(|s| s.false_positives).sum();
    Some(Summary {
        filter,
        ours,
        n,
        bits_per_key: last.size_bytes as f64 * 8.0 / n.max(1) as f64,
        fpr: false_positives as f64 / (probes.max(1) * samples.len()) as f64,
        expected_fpr: last.expected_fpr,
        detail: last.detail.clone(),
        false_negatives: samples.iter().map(|s| s.false_negatives).max().unwrap_or(0),
        build_ns_per_key: timings(|s| s.build_ns_per_key),
        query_pos_ns: timings(|s| s.query_pos_ns),
        query_neg_ns: timings(|s| s.query_neg_ns),
        probe_neg_ns: samples
            .iter()
            .map(|s| s.probe_neg_ns)
            .collect::<Option<Vec<f64>>>()
            .map(|t| Spread::of(&t)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(build: f64, fp: u64, fneg: u64) -> Sample {
        Sample {
            build_ns_per_key: build,
            query_pos_ns: 2.0,
            query_neg_ns: 1.0,
            probe_neg_ns: Some(0.5),
            false_negatives: fneg,
            false_positives: fp,
            size_bytes: 1_250,
            expected_fpr: Some(0.01),
            detail: String::new(),
        }
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(Spread::of(&[3.0, 1.0, 2.0]).median, 2.0);
        assert_eq!(Spread::of(&[4.0, 1.0, 3.0, 2.0]).median, 2.5);
        let s = Spread::of(&[5.0, 1.0, 9.0]);
        assert_eq!((s.min, s.max), (1.0, 9.0));
        assert_eq!(s.relative_range(), 8.0 / 5.0);
        assert_eq!(Spread::of(&[]).median, 0.0);
    }

    #[test]
    fn summary_pools_false_positives_and_keeps_worst_false_negatives() {
        let samples = [
            sample(10.0, 30, 0),
            sample(30.0, 10, 2),
            sample(20.0, 20, 1),
        ];
        let s = summarize("x", true, 1_000, 1_000, &samples).unwrap();
        assert_eq!(s.bits_per_key, 10.0);
        assert_eq!(s.fpr, 60.0 / 3_000.0);
        assert_eq!(s.false_negatives, 2);
        assert_eq!(s.build_ns_per_key.median, 20.0);
        assert_eq!(s.probe_neg_ns.map(|t| t.median), Some(0.5));
        assert!(summarize("x", true, 1, 1, &[]).is_none());
    }
}
