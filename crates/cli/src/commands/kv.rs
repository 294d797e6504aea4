//! `sift put`, `get` and `delete`.

use std::path::Path;

use siftdb::PersistMode;

use super::{open_existing, open_for_reading, open_or_create};
use crate::error::{Failure, Outcome};
use crate::output::Output;

/// Stores `value` under `key` and syncs it.
pub fn put(db: &Path, key: &str, value: &str, out: &mut Output) -> Outcome {
    let (key, value) = (out.parse("key", key)?, out.parse("value", value)?);
    let db = open_or_create(db)?;
    db.insert(&key, &value)?;
    Ok(db.persist(PersistMode::SyncAll)?)
}

/// Prints the value under `key`; [`Failure::not_found`] if there is none.
pub fn get(db: &Path, key: &str, out: &mut Output) -> Outcome {
    let key = out.parse("key", key)?;
    let db = open_for_reading(db)?;
    print_found(&key, db.get(&key)?, out)
}

/// Prints the value found under `key` (the entry, with `--json`);
/// [`Failure::not_found`] if there is none.
pub fn print_found(key: &[u8], value: Option<Vec<u8>>, out: &mut Output) -> Outcome {
    let Some(value) = value else {
        return Err(Failure::not_found(format!(
            "key {} not found",
            out.render(key)
        )));
    };
    if out.json {
        out.entry(key, Some(&value))
    } else {
        let text = out.render(&value);
        out.line(text)
    }
}

/// Deletes `key` and syncs the deletion.
pub fn delete(db: &Path, key: &str, out: &mut Output) -> Outcome {
    let key = out.parse("key", key)?;
    let db = open_existing(db)?;
    db.remove(&key)?;
    Ok(db.persist(PersistMode::SyncAll)?)
}
