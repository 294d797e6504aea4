//! `sift scan`: entries in key order, by prefix or range, either direction.

use std::ops::Bound::{Excluded, Included, Unbounded};
use std::path::Path;

use super::open_for_reading;
use crate::cli::ScanArgs;
use crate::error::{Failure, Outcome};
use crate::output::Output;

/// Prints the entries `args` selects.
pub fn run(db: &Path, args: &ScanArgs, out: &mut Output) -> Outcome {
    let from = out.parse_optional("--from", args.from.as_deref())?;
    let to = out.parse_optional("--to", args.to.as_deref())?;
    let prefix = out.parse_optional("--prefix", args.prefix.as_deref())?;
    check_range(from.as_deref(), to.as_deref(), out)?;
    let (from, to) = (
        from.map_or(Unbounded, Included),
        to.map_or(Unbounded, Excluded),
    );
    let db = open_for_reading(db)?;
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

/// Refuses `--from` after `--to`: the range would be empty, which is more
/// likely bounds given in the wrong order (`--reverse` with them flipped)
/// than a question whose answer is nothing.
pub fn check_range(from: Option<&[u8]>, to: Option<&[u8]>, out: &Output) -> Outcome {
    match (from, to) {
        (Some(from), Some(to)) if from > to => Err(Failure::usage(format!(
            "--from {} is after --to {}: --from is the first key and --to the end, \
             also with --reverse",
            out.render(from),
            out.render(to)
        ))),
        _ => Ok(()),
    }
}
