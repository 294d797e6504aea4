//! Phase 4: searches by value, each made twice: through the value filters
//! (the planner's choice of method) and by reading every table
//! ([`Method::Scan`]). Both must return the same keys.

use std::time::{Duration, Instant};

use siftdb::{Db, Find, FindStats, Method};

use crate::error::{Failure, Outcome};

/// A search shorter than this is repeated (up to [`MAX_REPEATS`] times)
/// and its median time reported: one run of a sub-millisecond search is
/// mostly timer and scheduler noise.
const REPEAT_BELOW: Duration = Duration::from_millis(20);

/// Most runs of one short search.
const MAX_REPEATS: usize = 21;

/// One search to make, and what it is meant to show.
#[derive(Debug)]
pub struct Query {
    /// The value index.
    pub index: &'static str,
    /// The value searched for.
    pub value: String,
    /// What kind of value it is, in a few words.
    pub label: &'static str,
}

/// What one search did both ways.
#[derive(Debug)]
pub struct SearchFigures {
    /// The search.
    pub query: Query,
    /// Tables in the database.
    pub tables: u64,
    /// Through the filters: what it did, and its (median) wall time.
    pub filtered: (FindStats, Duration),
    /// By full scan.
    pub scan: (FindStats, Duration),
}

impl SearchFigures {
    /// Scan time over filtered time.
    pub fn speedup(&self) -> f64 {
        self.scan.1.as_secs_f64() / self.filtered.1.as_secs_f64().max(1e-9)
    }
}

/// Makes `query` through the filters and by scan; fails (exit 3) if they
/// disagree on a single key.
pub fn compare(db: &Db, query: Query) -> Outcome<SearchFigures> {
    let tables = db.stats().levels.iter().map(|l| l.tables as u64).sum();
    let ((filtered_keys, filtered_stats), filtered_time) =
        timed(|| db.find(query.index, &query.value))?;
    let ((scan_keys, scan_stats), scan_time) =
        timed(|| db.find_with(query.index, &query.value, Method::Scan))?;
    if filtered_keys != scan_keys {
        return Err(Failure::storage(format!(
            "search {}={:?}: the filters returned {} keys, a full scan {}: \
             the value index lost or invented results",
            query.index,
            query.value,
            filtered_keys.len(),
            scan_keys.len()
        )));
    }
    Ok(SearchFigures {
        query,
        tables,
        filtered: (filtered_stats, filtered_time),
        scan: (scan_stats, scan_time),
    })
}

/// The keys a search returned, in order, and what it did.
type Searched = (Vec<Vec<u8>>, FindStats);

/// Runs `search` to its last result, again while it is short; the keys
/// and stats of the first run, and the median time.
fn timed(mut search: impl FnMut() -> siftdb::Result<Find>) -> Outcome<(Searched, Duration)> {
    let run = |search: &mut dyn FnMut() -> siftdb::Result<Find>| -> Outcome<(Searched, Duration)> {
        let started = Instant::now();
        let mut found = search()?;
        let keys = found
            .by_ref()
            .map(|item| item.map(|(key, _)| key))
            .collect::<siftdb::Result<Vec<_>>>()?;
        Ok(((keys, *found.stats()), started.elapsed()))
    };
    let (first, time) = run(&mut search)?;
    let mut times = vec![time];
    while times.len() < MAX_REPEATS && times.iter().sum::<Duration>() < REPEAT_BELOW {
        times.push(run(&mut search)?.1);
    }
    times.sort_unstable();
    Ok((first, times[times.len() / 2]))
}
