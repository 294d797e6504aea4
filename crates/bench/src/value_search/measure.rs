//! Running one query class through every contender, interleaved, and
//! checking every answer against the generator.
//!
//! The five filter contenders search the value-index store, `exact-index`
//! its own store of the same records. Each batch of queries runs through
//! every contender, in an order rotated by one per batch, before the next
//! batch starts; every repetition asks for other values, every contender
//! for the same ones. Timed: the search and draining its result (for the
//! exact index, the prefix scan and the validating `get`s).

use std::time::{Duration, Instant};

use anyhow::bail;
use siftdb::{Db, Extractor, Method};

use super::dataset::{Class, Dataset, Query};
use super::exact;
use super::stores::INDEX;

/// One way of searching.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Contender {
    /// `Method::Scan`: a merged scan of the store, no filter.
    Scan,
    /// Every leaf in turn.
    BloomScan,
    /// The Bloofi tree.
    Hierarchy,
    /// The bit-sliced layout.
    Flat,
    /// `Db::find`: the planner's choice.
    Planner,
    /// The hand-built exact index, on its own store.
    ExactIndex,
}

impl Contender {
    /// Every contender, in report order.
    pub const ALL: [Self; 6] = [
        Self::Scan,
        Self::BloomScan,
        Self::Hierarchy,
        Self::Flat,
        Self::Planner,
        Self::ExactIndex,
    ];

    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Scan => "scan",
            Self::BloomScan => "bloom-scan",
            Self::Hierarchy => "hierarchy",
            Self::Flat => "flat",
            Self::Planner => "planner",
            Self::ExactIndex => "exact-index",
        }
    }

    /// Whether its counters come from `FindStats`.
    pub fn uses_filters(self) -> bool {
        self != Self::ExactIndex
    }
}

/// What one contender did over all queries and repetitions of a class.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// Queries run.
    pub queries: u64,
    /// Mean milliseconds per query, one per repetition.
    pub rep_ms: Vec<f64>,
    /// Sums of `FindStats` counters.
    pub leaves_positive: u64,
    /// Tables read.
    pub tables_read: u64,
    /// Data blocks read.
    pub blocks_read: u64,
    /// Blocks read that held the value.
    pub blocks_matched: u64,
    /// Keys returned.
    pub results: u64,
    /// Planner: searches that read the candidate blocks.
    pub read_candidates: u64,
    /// Planner: searches where it chose a scan after probing.
    pub chose_scan: u64,
    /// Planner: searches that read the memtables and the newest runs
    /// whole (and the other runs' candidate blocks).
    pub read_whole: u64,
    /// Searches that read no data block.
    pub no_block: u64,
    /// Exact index: index entries read.
    pub index_entries: u64,
    /// Exact index: entries whose record no longer had the value.
    pub stale: u64,
}

impl Tally {
    /// Mean of a summed counter per query.
    pub fn mean(&self, sum: u64) -> f64 {
        sum as f64 / self.queries.max(1) as f64
    }
}

/// The stores a class is searched in.
pub struct Stores<'a> {
    /// Records with the value index.
    pub value_index: &'a Db,
    /// Records with the exact index.
    pub exact_index: &'a Db,
    /// The records and their answers.
    pub data: &'a Dataset,
    /// The indexed field's extractor (for checks and the exact index).
    pub extractor: Extractor,
    /// Report label of the stores, for error messages.
    pub label: String,
}

/// Runs `queries` queries of `class` per repetition through every
/// contender, interleaved in batches of `batch`. A wrong answer is an error.
pub fn run(
    stores: &Stores<'_>,
    class: Class,
    queries: u64,
    reps: u64,
    batch: u64,
) -> anyhow::Result<Vec<(Contender, Tally)>> {
    let mut tallies: Vec<(Contender, Tally)> = Contender::ALL
        .iter()
        .map(|&c| (c, Tally::default()))
        .collect();
    let batch = batch.max(1);
    let mut turn = 0usize;
    for rep in 0..reps {
        let mut elapsed = [Duration::ZERO; Contender::ALL.len()];
        let mut start = 0;
        while start < queries {
            let end = (start + batch).min(queries);
            let values: Vec<Query> = (start..end)
                .map(|q| stores.data.query(class, rep, q))
                .collect();
            for step in 0..tallies.len() {
                let slot = (step + turn) % tallies.len();
                let (contender, tally) = &mut tallies[slot];
                for query in &values {
                    elapsed[slot] += search(stores, *contender, class, query, tally)?;
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

/// Runs one search of every contender on a fresh store, untimed in the
/// medians, the planner first: the first search after a load builds the
/// index's search structures and measures the planner's costs. Returns the
/// planner's milliseconds (that one-time cost included). Answers are
/// checked as always.
pub fn warm_up(stores: &Stores<'_>) -> anyhow::Result<f64> {
    let query = stores.data.query(Class::Uniform, u64::MAX, 0);
    let mut first = None;
    let mut tally = Tally::default();
    let order = std::iter::once(Contender::Planner).chain(
        Contender::ALL
            .into_iter()
            .filter(|&c| c != Contender::Planner),
    );
    for contender in order {
        let time = search(stores, contender, Class::Uniform, &query, &mut tally)?;
        first.get_or_insert(time.as_secs_f64() * 1e3);
    }
    Ok(first.unwrap_or(0.0))
}

/// Runs one query, checks its answer, adds its counters to `tally` and
/// returns its time.
fn search(
    stores: &Stores<'_>,
    contender: Contender,
    class: Class,
    query: &Query,
    tally: &mut Tally,
) -> anyhow::Result<Duration> {
    let value = query.value.as_bytes();
    let method = match contender {
        Contender::Scan => Some(Method::Scan),
        Contender::BloomScan => Some(Method::BloomScan),
        Contender::Hierarchy => Some(Method::Hierarchy),
        Contender::Flat => Some(Method::Flat),
        Contender::Planner | Contender::ExactIndex => None,
    };
    let (keys, time) = if contender == Contender::ExactIndex {
        let start = Instant::now();
        let answer = exact::find(stores.exact_index, &stores.extractor, value)?;
        let time = start.elapsed();
        tally.index_entries += answer.entries;
        tally.stale += answer.stale;
        (answer.keys, time)
    } else {
        let start = Instant::now();
        let mut find = match method {
            Some(method) => stores.value_index.find_with(INDEX, value, method)?,
            None => stores.value_index.find(INDEX, value)?,
        };
        let found = find.by_ref().collect::<Result<Vec<_>, _>>()?;
        let time = start.elapsed();
        let stats = *find.stats();
        tally.leaves_positive += stats.leaves_positive;
        tally.tables_read += stats.tables_scanned;
        tally.blocks_read += stats.blocks_read;
        tally.blocks_matched += stats.blocks_matched;
        tally.no_block += u64::from(stats.blocks_read == 0);
        if contender == Contender::Planner {
            if stats.method == Method::Scan {
                tally.chose_scan += 1;
            } else {
                tally.read_candidates += 1;
                tally.read_whole += u64::from(stats.read_whole);
            }
        }
        let mut keys = Vec::with_capacity(found.len());
        for (key, record) in found {
            let mut holds = false;
            stores
                .extractor
                .extract(&record, &mut |v| holds |= v == value);
            if !holds {
                bail!(
                    "{}: {} {}: a search for {:?} returned key {:?} whose record is {:?}",
                    stores.label,
                    contender.name(),
                    class.name(),
                    query.value,
                    String::from_utf8_lossy(&key),
                    String::from_utf8_lossy(&record)
                );
            }
            keys.push(key);
        }
        (keys, time)
    };
    check(stores, contender, class, query, &keys)?;
    tally.queries += 1;
    tally.results += keys.len() as u64;
    Ok(time)
}

/// Fails unless `keys` are exactly the generator's keys for the query.
fn check(
    stores: &Stores<'_>,
    contender: Contender,
    class: Class,
    query: &Query,
    keys: &[Vec<u8>],
) -> anyhow::Result<()> {
    let empty: &[u8] = &[];
    let expected: Vec<&[u8]> = match query.id {
        Some(id) => stores.data.expected(id).collect(),
        None => Vec::new(),
    };
    if keys.len() == expected.len() && keys.iter().zip(&expected).all(|(k, e)| k[..] == e[..]) {
        return Ok(());
    }
    let first = keys
        .iter()
        .map(Vec::as_slice)
        .zip(expected.iter().copied())
        .find(|(k, e)| k != e)
        .or_else(|| {
            let n = keys.len().min(expected.len());
            Some((
                keys.get(n).map_or(empty, Vec::as_slice),
                expected.get(n).copied().unwrap_or(empty),
            ))
        });
    let (got, want) = first.unwrap_or((empty, empty));
    bail!(
        "{}: {} {}: a search for {:?} returned {} keys, {} expected; first difference: got {:?}, expected {:?}",
        stores.label,
        contender.name(),
        class.name(),
        query.value,
        keys.len(),
        expected.len(),
        String::from_utf8_lossy(got),
        String::from_utf8_lossy(want)
    )
}
