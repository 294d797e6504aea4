//! `sift scan`: entries in key order, by prefix or range, either direction.

use std::ops::Bound;
use std::path::Path;

use super::open_existing;
use crate::cli::ScanArgs;
use crate::error::Outcome;
use crate::output::Output;

/// Prints the entries `args` selects.
pub fn run(db: &Path, args: &ScanArgs, out: &mut Output) -> Outcome {
    let bound = |key: &Option<String>, what, make: fn(Vec<u8>) -> Bound<Vec<u8>>| {
        key.as_deref()
            .map(|key| out.parse(what, key).map(make))
            .transpose()
            .map(|b| b.unwrap_or(Bound::Unbounded))
    };
    let from = bound(&args.from, "--from", Bound::Included)?;
    let to = bound(&args.to, "--to", Bound::Excluded)?;
    let prefix = args
        .prefix
        .as_deref()
        .map(|p| out.parse("--prefix", p))
        .transpose()?;
    let db = open_existing(db)?;
    let iter = match &prefix {
        Some(prefix) => db.prefix(prefix),
        None => db.range((from, to)),
    };
    let entries: Box<dyn Iterator<Item = _>> = if args.reverse {
        Box::new(iter.rev())
    } else {
        Box::new(iter)
    };
    for entry in entries.take(args.limit.unwrap_or(usize::MAX)) {
        let (key, value) = entry?;
        out.entry(&key, (!args.keys_only).then_some(&value[..]))?;
    }
    Ok(())
}
