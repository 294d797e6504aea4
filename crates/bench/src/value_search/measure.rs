//! Running the queries of one loaded database through every method, and
//! checking every answer.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure};
use siftdb::{Db, Method};

use super::data::Data;
use super::store::INDEX;

/// One way of searching: a fixed method, or the planner's choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Searcher {
    /// Every table, no filter read.
    Scan,
    /// Every leaf filter in turn.
    BloomScan,
    /// The Bloofi tree.
    Hierarchy,
    /// The bit-sliced layout.
    Flat,
    /// `Db::find`: the planner picks one of the four.
    Planner,
}

impl Searcher {
    /// Every searcher, in the order of the report.
    pub const ALL: [Self; 5] = [
        Self::Scan,
        Self::BloomScan,
        Self::Hierarchy,
        Self::Flat,
        Self::Planner,
    ];

    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Scan => "scan",
            Self::BloomScan => "bloom-scan",
            Self::Hierarchy => "hierarchy",
            Self::Flat => "flat",
            Self::Planner => "planner",
        }
    }

    fn method(self) -> Option<Method> {
        match self {
            Self::Scan => Some(Method::Scan),
            Self::BloomScan => Some(Method::BloomScan),
            Self::Hierarchy => Some(Method::Hierarchy),
            Self::Flat => Some(Method::Flat),
            Self::Planner => None,
        }
    }
}

/// Report name of a method the planner picked.
fn method_name(method: Method) -> &'static str {
    match method {
        Method::Scan => Searcher::Scan.name(),
        Method::BloomScan => Searcher::BloomScan.name(),
        Method::Hierarchy => Searcher::Hierarchy.name(),
        Method::Flat => Searcher::Flat.name(),
    }
}

/// Which values the queries ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Values {
    /// Values some entry holds, each with equal chance.
    Present,
    /// Values no entry holds.
    Absent,
}

/// What one searcher did over all queries and repetitions.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// Queries run (over all repetitions).
    pub queries: u64,
    /// Sums of the per-query counters.
    pub nodes_probed: u64,
    /// Leaf filters probed.
    pub leaves_probed: u64,
    /// Leaves answering "maybe".
    pub leaves_positive: u64,
    /// Tables scanned.
    pub tables_scanned: u64,
    /// Tables that really held a matching entry.
    pub tables_true: u64,
    /// Queries that scanned no table at all.
    pub no_scan: u64,
    /// Mean milliseconds per query, one per repetition.
    pub rep_ms: Vec<f64>,
    /// Methods the planner picked, with counts.
    pub picks: Vec<(&'static str, u64)>,
}

impl Tally {
    /// Mean of a summed counter per query.
    pub fn per_query(&self, sum: u64) -> f64 {
        sum as f64 / self.queries.max(1) as f64
    }
}

/// Runs `queries` queries per repetition through every searcher on `db`,
/// interleaved: each batch of `batch` queries runs through all searchers,
/// in an order rotated by one per batch, before the next batch starts.
/// Every answer is checked against `data`; a wrong one is an error.
pub fn run(
    db: &Db,
    data: &Data,
    values: Values,
    queries: u64,
    reps: u64,
    batch: u64,
) -> anyhow::Result<Vec<(Searcher, Tally)>> {
    let mut tallies: Vec<(Searcher, Tally)> = Searcher::ALL
        .iter()
        .map(|&s| (s, Tally::default()))
        .collect();
    let batch = batch.max(1);
    let mut turn = 0usize;
    for rep in 0..reps {
        let mut elapsed = [Duration::ZERO; Searcher::ALL.len()];
        let mut start = 0;
        while start < queries {
            let end = (start + batch).min(queries);
            for step in 0..tallies.len() {
                let slot = (step + turn) % tallies.len();
                let (searcher, tally) = &mut tallies[slot];
                for q in start..end {
                    elapsed[slot] += query(db, data, values, *searcher, rep, q, tally)?;
                }
            }
            turn += 1;
            start = end;
        }
        for ((_, tally), time) in tallies.iter_mut().zip(elapsed) {
            tally
                .rep_ms
                .push(time.as_secs_f64() * 1e3 / queries.max(1) as f64);
        }
    }
    Ok(tallies)
}

/// Runs query `q` of repetition `rep`, checks its answer, adds its
/// counters to `tally` and returns its time.
fn query(
    db: &Db,
    data: &Data,
    values: Values,
    searcher: Searcher,
    rep: u64,
    q: u64,
    tally: &mut Tally,
) -> anyhow::Result<Duration> {
    // Stream 2·rep for present values, 2·rep + 1 for absent ones: every
    // repetition asks for other values, every searcher for the same ones.
    let (value, id) = match values {
        Values::Present => {
            let (text, id) = data.present_value(2 * rep, q);
            (text, Some(id))
        }
        Values::Absent => (data.absent_value(2 * rep + 1, q), None),
    };
    let start = Instant::now();
    let find = match searcher.method() {
        Some(method) => db.find_with(INDEX, &value, method)?,
        None => db.find(INDEX, &value)?,
    };
    let stats = find.stats();
    let counters = [
        stats.inner_nodes_probed,
        stats.leaves_probed,
        stats.leaves_positive,
        stats.tables_scanned,
        stats.tables_matched,
    ];
    let picked = stats.method;
    let found = find.collect::<Result<Vec<_>, _>>()?;
    let time = start.elapsed();

    let mut keys = Vec::with_capacity(found.len());
    for (key, stored) in found {
        ensure!(
            stored == value.as_bytes(),
            "{}: a search for {value} returned an entry whose value is {:?}",
            searcher.name(),
            String::from_utf8_lossy(&stored)
        );
        keys.push(key);
    }
    keys.sort_unstable();
    let expected = id.map(|id| data.expected(id)).unwrap_or_default();
    if keys.len() != expected.len() || keys.iter().zip(&expected).any(|(k, e)| k[..] != e[..]) {
        bail!(
            "{}: a search for {value} returned {} entries, {} expected (or other keys)",
            searcher.name(),
            keys.len(),
            expected.len()
        );
    }

    tally.queries += 1;
    let [nodes, leaves, positive, scanned, matched] = counters;
    tally.nodes_probed += nodes;
    tally.leaves_probed += leaves;
    tally.leaves_positive += positive;
    tally.tables_scanned += scanned;
    tally.tables_true += matched;
    tally.no_scan += u64::from(scanned == 0);
    if searcher == Searcher::Planner {
        let picked = method_name(picked);
        match tally.picks.iter_mut().find(|(name, _)| *name == picked) {
            Some((_, n)) => *n += 1,
            None => tally.picks.push((picked, 1)),
        }
    }
    Ok(time)
}
