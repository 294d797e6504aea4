//! What the manifest says: CURRENT and the manifest it names, replayed
//! into the live tables, value indexes and oldest needed WAL, as recovery
//! replays them (`db/open.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::Findings;
use crate::key::user_key_of;
use crate::manifest::{FileKind, TableMeta, filenames, read_current, read_manifest};
use crate::value::IndexRecord;

/// The live state the manifest records.
#[derive(Debug)]
pub(super) struct Catalog {
    /// The manifest file.
    pub manifest: PathBuf,
    /// Live tables by file number.
    pub tables: BTreeMap<u64, TableMeta>,
    /// Live value indexes.
    pub indexes: Vec<IndexRecord>,
    /// Oldest WAL recovery replays (0: none).
    pub log_number: u64,
}

/// Reads CURRENT and its manifest. Returns the manifest CURRENT names (if
/// CURRENT could be read) and what it records (if it too could be read);
/// damage is reported in `out`.
pub(super) fn read(
    fs: &dyn crate::fs::FileSystem,
    dir: &Path,
    names: &[String],
    out: &mut Findings,
) -> (Option<PathBuf>, Option<Catalog>) {
    let current = dir.join(filenames::CURRENT);
    let name = match read_current(fs, dir) {
        Ok(Some(name)) => name,
        Ok(None) => {
            let holds_data = names.iter().any(|n| {
                matches!(
                    filenames::parse(n),
                    Some(FileKind::Table(_) | FileKind::Manifest(_))
                )
            });
            if holds_data {
                out.problem(
                    &current,
                    None,
                    "CURRENT is missing but the directory holds tables or manifests",
                );
            } else {
                out.note(
                    "no CURRENT and no manifest: a database whose creation was interrupted; the \
                     next open replays its WAL",
                );
            }
            return (None, None);
        }
        Err(err) => {
            out.error(err, &current);
            return (None, None);
        }
    };
    let path = dir.join(&name);
    let edits = match read_manifest(fs, dir, &name) {
        Ok(edits) => edits,
        Err(err) => {
            out.error(err, &path);
            return (Some(path), None);
        }
    };
    let mut catalog = Catalog {
        manifest: path.clone(),
        tables: BTreeMap::new(),
        indexes: Vec::new(),
        log_number: 0,
    };
    for edit in &edits {
        edit.apply_indexes(&mut catalog.indexes);
        for (_, id) in &edit.removed {
            catalog.tables.remove(id);
        }
        for meta in &edit.added {
            catalog.tables.insert(meta.id, meta.clone());
        }
        catalog.log_number = edit.log_number.unwrap_or(0).max(catalog.log_number);
    }
    check_runs(&catalog, out);
    (Some(path), Some(catalog))
}

/// Reports tables of one sorted run whose key ranges overlap: a read looks
/// for a key in one table of each run, so the other's copy would be lost.
fn check_runs(catalog: &Catalog, out: &mut Findings) {
    let mut runs: BTreeMap<(u32, u64), Vec<&TableMeta>> = BTreeMap::new();
    for meta in catalog.tables.values() {
        runs.entry((meta.level, meta.run)).or_default().push(meta);
    }
    for ((level, run), mut tables) in runs {
        tables.sort_by(|a, b| user_key_of(&a.smallest).cmp(user_key_of(&b.smallest)));
        for pair in tables.windows(2) {
            let [a, b] = pair else { continue };
            if user_key_of(&a.largest) >= user_key_of(&b.smallest) {
                out.problem(
                    &catalog.manifest,
                    None,
                    format!(
                        "tables {} and {} of level {level}, run {run} overlap in key range",
                        filenames::table(a.id),
                        filenames::table(b.id)
                    ),
                );
            }
        }
    }
}
