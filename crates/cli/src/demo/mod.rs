//! `sift demo`: loads a deterministic data set of flight bookings into a
//! fresh database and shows, with timings and the engine's own counters,
//! what Sift's filters do with it: point lookups of present and missing
//! keys, range scans, and searches by value through the value filters
//! against a full scan.

mod airports;
pub(crate) mod calendar;
mod dir;
mod load;
mod reads;
mod records;
mod report;
mod rng;
mod search;
mod timetable;

use std::path::PathBuf;
use std::time::Instant;

use crate::error::Outcome;
use crate::output::Output;
use airports::{ABSENT_AIRPORT, AIRPORTS};
use dir::DemoDir;
use records::{ABSENT_BOOKING, Generator};
use search::Query;

/// Keys looked up in each lookup phase (present, then missing): enough for
/// a stable mean, a fraction of a second each.
const LOOKUPS: u64 = 100_000;

/// One-flight range scans made (a flight is about 120 records).
const FLIGHT_SCANS: usize = 1_000;

/// Seed of the lookup order (any fixed value: the same order every run).
const LOOKUP_SEED: u64 = 42;

/// Options of `sift demo`.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Records to load (one per passenger on a flight).
    #[arg(long, default_value_t = 1_000_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub records: u64,
    /// The demo database's directory (default: sift-demo in the OS
    /// temporary directory). A previous demo there is deleted first; a
    /// directory holding anything else is refused.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Leave the database in place afterwards (for `sift --db <dir> ...`).
    #[arg(long)]
    pub keep: bool,
}

/// Runs the demo.
pub fn run(args: &DemoArgs, out: &mut Output) -> Outcome {
    let started = Instant::now();
    let path = args.dir.clone().unwrap_or_else(dir::default_dir);
    let demo_dir = DemoDir::prepare(&path)?;
    let shown_dir = path.display().to_string();
    report::intro(out, args.records, &shown_dir, records::SEED)?;

    let loaded = load::load(&path, args.records, LOOKUPS.min(args.records))?;
    let db = &loaded.db;
    let stats = db.stats();
    let tables = stats.levels.iter().map(|l| l.tables as u64).sum();
    let first = Generator::new(1).next().unwrap_or_else(|| records::Record {
        key: String::new(),
        value: String::new(),
    });
    report::load(out, &loaded.figures, (&first.key, &first.value), tables)?;
    crate::report::indexes(out, &db.indexes())?;

    let present = reads::shuffled(&loaded.samples, LOOKUP_SEED);
    let missing = reads::missing_keys(&present);
    let lookups = [
        reads::lookups(db, &present, true)?,
        reads::lookups(db, &missing, false)?,
    ];
    report::lookups(out, &lookups)?;

    let flights: Vec<String> = present
        .iter()
        .take(FLIGHT_SCANS)
        .map(|key| reads::key_prefix(key, 3))
        .collect();
    let middle = loaded
        .samples
        .get(loaded.samples.len() / 2)
        .cloned()
        .unwrap_or_default();
    let ranges = [
        reads::ranges(db, "one flight on one day", &flights)?,
        reads::ranges(db, "one whole day", &[reads::key_prefix(&middle, 2)])?,
    ];
    report::ranges(out, &ranges)?;

    let mut searches = Vec::new();
    for query in queries(&middle) {
        searches.push(search::compare(db, query)?);
    }
    report::searches(out, &searches)?;

    report::heading(out, "5. Filters per level")?;
    report::say(
        out,
        &[
            "The tables by level, with their key filters (bits per key are spent where they save the",
            "most reads; deep levels get Ribbon filters, smaller for the same accuracy) and what the",
            "filters answered the lookups above since the database was opened (searches by value",
            "check their candidates against newer versions through the same filters, uncounted).",
            "FPR: \"maybe\" answers for tables without the key, over all probes of such tables.",
        ],
    )?;
    crate::report::levels(out, &db.stats())?;

    drop(loaded);
    if !args.keep {
        demo_dir.remove()?;
    }
    report::summary(out, started.elapsed().as_secs_f64(), &shown_dir, args.keep)
}

/// The searches by value: a booking (high cardinality), a Saturday-only
/// ski airport (low cardinality, clustered in a few days), the busiest
/// airport (in every table), and two values no record has.
fn queries(middle_key: &str) -> Vec<Query> {
    // flight/<date>/<flight>/<booking>-<passenger>
    let booking = middle_key
        .split('/')
        .nth(3)
        .and_then(|last| last.split('-').next())
        .unwrap_or(ABSENT_BOOKING)
        .to_owned();
    vec![
        Query {
            index: "booking",
            value: booking,
            label: "one party's booking",
        },
        Query {
            index: "origin",
            value: ski_airport(),
            label: "ski airport, Saturdays only",
        },
        Query {
            index: "origin",
            value: AIRPORTS[0].code.to_owned(),
            label: "the busiest airport",
        },
        Query {
            index: "origin",
            value: ABSENT_AIRPORT.to_owned(),
            label: "an airport not in the data",
        },
        Query {
            index: "booking",
            value: ABSENT_BOOKING.to_owned(),
            label: "a booking not in the data",
        },
    ]
}

/// The Saturday-only airport with the most departures in the timetable.
fn ski_airport() -> String {
    let generator = Generator::new(0);
    AIRPORTS
        .iter()
        .enumerate()
        .filter(|(_, a)| a.saturdays_only)
        .max_by_key(|&(i, _)| {
            generator
                .timetable()
                .iter()
                .filter(|f| f.origin == i)
                .count()
        })
        .map_or(ABSENT_AIRPORT, |(_, a)| a.code)
        .to_owned()
}
