//! `sift index add|list|drop`: value indexes.

use std::path::Path;

use serde_json::json;
use siftdb::{Db, Extractor, IndexDef};

use super::{open_existing, open_for_reading};
use crate::cli::{IndexAddArgs, IndexCommand};
use crate::commands::import::pointer;
use crate::error::{Failure, Outcome};
use crate::output::Output;
use crate::progress::{self, Unit};
use crate::report;

/// Runs one `sift index` subcommand.
pub fn run(db: &Path, command: IndexCommand, out: &mut Output) -> Outcome {
    match command {
        IndexCommand::List => report::indexes(out, &open_for_reading(db)?.indexes()),
        IndexCommand::Add(args) => add(&open_existing(db)?, &args, out),
        IndexCommand::Drop { name } => {
            let db = open_existing(db)?;
            if !db.indexes().iter().any(|index| index.name == name) {
                return Err(Failure::not_found(format!("no value index named {name:?}")));
            }
            Ok(db.drop_index(&name)?)
        }
    }
}

/// Declares the index, then fills it for the existing tables (each is
/// rewritten with the index's filter), showing how many tables are done.
fn add(db: &Db, args: &IndexAddArgs, out: &mut Output) -> Outcome {
    let mut def = IndexDef::new(&args.name, extractor(args)?);
    if let Some(bits) = args.leaf_bits {
        def = def.leaf_bits(bits);
    }
    db.add_index(def)?;
    let info = |db: &Db| {
        db.indexes()
            .into_iter()
            .find(|index| index.name == args.name)
    };
    let total = info(db).map_or(0, |i| i.tables_indexed + i.tables_missing) as u64;
    let bar = progress::bar("backfill", total, Unit::Items("tables"));
    progress::track(
        &bar,
        || db.wait_for_backfill(),
        || info(db).map_or(0, |index| index.tables_indexed as u64),
    )?;
    let index = info(db).ok_or_else(|| Failure::storage("the index vanished while filling"))?;
    if out.json {
        out.json_line(&json!({ "added": report::index_json(&index) }))
    } else {
        out.line(format!(
            "added index {:?} ({}) to {} tables",
            index.name, index.extractor, index.tables_indexed
        ))
    }
}

/// The extractor `args` names.
fn extractor(args: &IndexAddArgs) -> Outcome<Extractor> {
    if let Some(field) = &args.field {
        return Ok(Extractor::json_field(pointer(field)));
    }
    if let Some(column) = args.column {
        let &[separator] = args.separator.as_bytes() else {
            return Err(Failure::usage(format!(
                "--separator {:?}: must be a single byte",
                args.separator
            )));
        };
        return Ok(Extractor::delimited(column, separator));
    }
    Ok(Extractor::WholeValue)
}
