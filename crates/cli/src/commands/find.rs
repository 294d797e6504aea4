//! `sift find`: entries whose value holds a value, through a value index.

use std::path::Path;

use serde_json::json;
use siftdb::{Db, Find, Method};

use super::open_for_reading;
use crate::cli::{FindArgs, FindMethod};
use crate::error::{Failure, Outcome};
use crate::output::Output;
use crate::report;

/// Prints the entries matching `args`, then (`--explain`) what the search did.
pub fn run(db: &Path, args: &FindArgs, out: &mut Output) -> Outcome {
    let value = out.parse("value", &args.value)?;
    let limit = limit(args)?;
    let db = open_for_reading(db)?;
    if !db.indexes().iter().any(|index| index.name == args.index) {
        return Err(Failure::not_found(format!(
            "no value index named {:?} (see `sift index list`)",
            args.index
        )));
    }
    let mut found = search(&db, &args.index, &value, args.method)?;
    // The search reads as it is iterated: a limit stops its reads too.
    for entry in found.by_ref().take(limit) {
        let (key, value) = entry?;
        out.entry(&key, (!args.keys_only).then_some(&value[..]))?;
    }
    let stats = *found.stats();
    if args.explain {
        let tables = report::table_count(&db.stats());
        if out.json {
            out.json_line(&json!({ "explain": report::explain_json(&stats, tables) }))?;
        } else {
            out.line(format!("explain: {}", report::explain_line(&stats, tables)))?;
        }
    }
    if stats.results == 0 {
        return Err(Failure::not_found(format!(
            "no entry has {} in index {:?}",
            out.render(&value),
            args.index
        )));
    }
    Ok(())
}

/// The most results to print. `--limit 0` is refused: it would print
/// nothing and then fail as if nothing matched.
pub fn limit(args: &FindArgs) -> Outcome<usize> {
    match args.limit {
        Some(0) => Err(Failure::usage(
            "--limit 0 asks for no results; give 1 or more, or leave it out",
        )),
        limit => Ok(limit.unwrap_or(usize::MAX)),
    }
}

/// Runs the search with the method asked for.
fn search(db: &Db, index: &str, value: &[u8], method: FindMethod) -> siftdb::Result<Find> {
    let method = match method {
        FindMethod::Auto => return db.find(index, value),
        FindMethod::Scan => Method::Scan,
        FindMethod::BloomScan => Method::BloomScan,
        FindMethod::Hierarchy => Method::Hierarchy,
        FindMethod::Flat => Method::Flat,
    };
    db.find_with(index, value, method)
}
