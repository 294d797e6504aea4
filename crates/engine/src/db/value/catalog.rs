//! The value indexes of an open database: resolving the declared
//! definitions against the manifest at open, adding and dropping indexes,
//! and reporting them.

use std::sync::Arc;

use super::IndexInfo;
use crate::db::{Db, Inner, Options, State, SuperVersion, lock};
use crate::error::{Error, Result};
use crate::manifest::VersionEdit;
use crate::sstable::ValueLeaf;
use crate::value_def::{Extractor, IndexDef, IndexRecord, expected_values};
use crate::version::{LiveTable, Version};

/// Distinct values a table of this database is expected to hold, for the
/// default leaf shape of a new index: tables as large as the larger of the
/// table target and the memtable, of entries as large as those stored now.
fn expected_table_values(options: &Options, version: &Version) -> u64 {
    let (bytes, entries) = version.tables().fold((0u64, 0u64), |(b, e), t| {
        (b + t.meta.file_size, e + t.meta.entries)
    });
    let table_bytes = options
        .table_target_bytes
        .max(options.memtable_bytes as u64);
    expected_values(table_bytes, bytes, entries, None)
}

/// The live indexes once the definitions `options` declares meet the ones
/// the manifest holds (`stored`). A declared index the manifest has with
/// another definition, or a stored custom index that is not declared, is
/// [`Error::InvalidArgument`]. New declared indexes get ids from
/// `next_file_number`, which is advanced past them.
pub(in crate::db) fn resolve(
    options: &Options,
    version: &Version,
    stored: Vec<IndexRecord>,
    next_file_number: &mut u64,
) -> Result<Vec<IndexRecord>> {
    let mut live = Vec::with_capacity(stored.len() + options.value_indexes.len());
    for record in stored {
        match options
            .value_indexes
            .iter()
            .find(|def| def.name() == record.name)
        {
            Some(def) => {
                if let Some(difference) = def.difference(&record) {
                    return Err(Error::InvalidArgument(format!(
                        "index {:?} conflicts with its stored definition: {difference}",
                        record.name
                    )));
                }
                live.push(IndexRecord {
                    extractor: def.extractor().clone(),
                    ..record
                });
            }
            None if matches!(record.extractor, Extractor::Custom { .. }) => {
                return Err(Error::InvalidArgument(format!(
                    "index {:?} uses the {} extractor, whose function is not stored: declare it \
                     again with DbBuilder::value_index at every open",
                    record.name,
                    record.extractor.description()
                )));
            }
            None => live.push(record),
        }
    }
    let expected = expected_table_values(options, version);
    for def in &options.value_indexes {
        if live.iter().all(|r| r.name != def.name()) {
            live.push(IndexRecord {
                id: *next_file_number,
                name: def.name().to_owned(),
                extractor: def.extractor().clone(),
                sizing: def.sizing(expected),
            });
            *next_file_number += 1;
        }
    }
    Ok(live)
}

/// Every table of `version` with its leaf of `index`; a table whose
/// metadata cannot be read is `Unreadable` (a search reads it whole, and
/// meets the damage there).
pub(super) fn leaves(version: &Version, index: &IndexRecord) -> Vec<(Arc<LiveTable>, ValueLeaf)> {
    version
        .tables()
        .map(|t| {
            let leaf = t
                .table()
                .map_or(ValueLeaf::Unreadable, |table| table.value_filter(index.id));
            (Arc::clone(t), leaf)
        })
        .collect()
}

impl Inner {
    /// The live value indexes (their definitions and leaf shapes).
    pub(in crate::db) fn indexes(&self) -> Arc<Vec<IndexRecord>> {
        self.indexes.load_full()
    }

    /// The live index called `name`.
    pub(super) fn index_named(&self, name: &str) -> Option<IndexRecord> {
        self.indexes.load().iter().find(|i| i.name == name).cloned()
    }

    /// Defines a new index, persisted before this returns.
    fn add_index(&self, def: &IndexDef) -> Result<()> {
        self.writable()?;
        def.validate()?;
        let mut state = lock(&self.state);
        Self::check_background_error(&state)?;
        let current = self.indexes.load_full();
        if current.iter().any(|i| i.name == def.name()) {
            return Err(Error::InvalidArgument(format!(
                "an index named {:?} already exists",
                def.name()
            )));
        }
        let id = state.versions.new_file_number();
        let record = IndexRecord {
            id,
            name: def.name().to_owned(),
            extractor: def.extractor().clone(),
            sizing: def.sizing(expected_table_values(
                &self.options,
                &self.current().version,
            )),
        };
        let edit = VersionEdit {
            added_indexes: vec![record],
            ..VersionEdit::default()
        };
        self.apply_index_edit(&mut state, &current, edit)
    }

    /// Drops the index called `name`, persisted before this returns.
    fn drop_index(&self, name: &str) -> Result<()> {
        self.writable()?;
        let mut state = lock(&self.state);
        Self::check_background_error(&state)?;
        let current = self.indexes.load_full();
        let Some(index) = current.iter().find(|i| i.name == name) else {
            return Err(Error::InvalidArgument(format!("no index named {name:?}")));
        };
        let edit = VersionEdit {
            dropped_indexes: vec![index.id],
            ..VersionEdit::default()
        };
        self.apply_index_edit(&mut state, &current, edit)
    }

    /// Logs an edit that only changes indexes, then publishes the new set.
    fn apply_index_edit(
        &self,
        state: &mut State,
        current: &[IndexRecord],
        edit: VersionEdit,
    ) -> Result<()> {
        let mut next = current.to_vec();
        edit.apply_indexes(&mut next);
        let version = self.log_and_apply(state, edit, &Default::default())?;
        // A dropped index's search structures go with it.
        self.value_leaves.retain(&next);
        self.indexes.store(Arc::new(next));
        let now = self.current();
        self.install(SuperVersion {
            active: Arc::clone(&now.active),
            immutables: now.immutables.clone(),
            version,
        });
        Ok(())
    }
}

impl Db {
    /// Defines a value index on the open database. Tables written from now
    /// on carry its leaf; tables written before get theirs from the
    /// background backfill ([`Db::wait_for_backfill`] waits for it). The
    /// definition is in the manifest when this returns; a
    /// [`Custom`](Extractor::Custom) index must be declared again with
    /// [`DbBuilder::value_index`](crate::DbBuilder::value_index) at every
    /// later open.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an invalid definition or a name
    /// already in use; [`Error::Io`] if the manifest cannot be written;
    /// [`Error::Background`].
    pub fn add_index(&self, def: IndexDef) -> Result<()> {
        self.inner.add_index(&def)
    }

    /// Drops the index called `name`. Its leaves stay in existing tables
    /// until they are rewritten, unused.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if there is no such index; as
    /// [`Db::add_index`] otherwise.
    pub fn drop_index(&self, name: &str) -> Result<()> {
        self.inner.drop_index(name)
    }

    /// The live value indexes, in the order they were defined, with how
    /// many live tables carry each one's leaf.
    #[must_use]
    pub fn indexes(&self) -> Vec<IndexInfo> {
        let version = Arc::clone(&self.inner.current().version);
        self.inner
            .indexes()
            .iter()
            .map(|index| {
                let mut info = IndexInfo {
                    name: index.name.clone(),
                    id: index.id,
                    extractor: index.extractor.description(),
                    leaf_sizing: index.sizing,
                    tables_indexed: 0,
                    tables_missing: 0,
                    tables_unreadable: 0,
                };
                for (_, leaf) in leaves(&version, index) {
                    match leaf {
                        ValueLeaf::Present(_) => info.tables_indexed += 1,
                        ValueLeaf::Missing => info.tables_missing += 1,
                        ValueLeaf::Unreadable => info.tables_unreadable += 1,
                    }
                }
                info
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "catalog_tests.rs"]
mod tests;
