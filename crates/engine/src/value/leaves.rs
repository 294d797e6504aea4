//! The value indexes' leaves, arranged for search (`sift-value-index`) and
//! kept in step with the versions: each search applies the difference
//! between the tables the structures reflect and the current version's,
//! so a flush or compaction costs O(changed tables x depth), never a
//! rebuild.

use std::collections::{BTreeMap, BTreeSet};

use sift_value_index::{Profile, ValueIndex};

use crate::error::{Error, Result};
use crate::value::IndexRecord;
use crate::value::ValueLeaf;
use crate::version::Version;

/// Hierarchy order used when the builder names none: a fan-out of 8 keeps
/// the tree shallow (3 levels over 500 tables) while an inner node's OR
/// covers few enough leaves to prune.
pub(crate) const DEFAULT_ORDER: usize = 8;

/// One index's search structures.
#[derive(Debug)]
pub(crate) struct IndexState {
    /// The definition the structures were built for.
    record: IndexRecord,
    /// Leaves of the tables that have a readable one.
    pub index: ValueIndex,
    /// Tables without a readable leaf (written before the index existed,
    /// or damaged): every search scans them.
    pub unindexed: BTreeSet<u64>,
    /// Every table the structures reflect.
    tables: BTreeSet<u64>,
    /// The planner's view of the leaves, computed on the first search
    /// after a change (it reads every leaf's bits).
    profile: Option<Profile>,
}

impl IndexState {
    /// The leaves' profile, recomputed only after the leaves changed.
    pub(crate) fn profile(&mut self) -> &Profile {
        self.profile.get_or_insert_with(|| self.index.profile())
    }
}

/// The search structures of every value index.
#[derive(Debug)]
pub(crate) struct IndexLeaves {
    order: usize,
    states: BTreeMap<u64, IndexState>,
}

impl IndexLeaves {
    /// No index yet; hierarchies get fan-out `order`.
    pub(crate) fn new(order: usize) -> Self {
        Self {
            order,
            states: BTreeMap::new(),
        }
    }

    /// The structures of index `id`, if a search has built them.
    pub(crate) fn state(&self, id: u64) -> Option<&IndexState> {
        self.states.get(&id)
    }

    /// Brings `record`'s structures in step with `version` and returns them.
    pub(crate) fn sync(
        &mut self,
        version: &Version,
        record: &IndexRecord,
    ) -> Result<&mut IndexState> {
        let internal = |e: sift_value_index::Error| {
            Error::Background(format!("value index {}: {e}", record.name))
        };
        if self
            .states
            .get(&record.id)
            .is_none_or(|s| s.record != *record)
        {
            let index = ValueIndex::new(record.shape, self.order).map_err(internal)?;
            self.states.insert(
                record.id,
                IndexState {
                    record: record.clone(),
                    index,
                    unindexed: BTreeSet::new(),
                    tables: BTreeSet::new(),
                    profile: None,
                },
            );
        }
        let Some(state) = self.states.get_mut(&record.id) else {
            return Err(internal(sift_value_index::Error::UnknownLeaf(record.id)));
        };
        let live: BTreeMap<u64, _> = version.tables().map(|t| (t.meta.id, t)).collect();
        let gone: Vec<u64> = state
            .tables
            .iter()
            .filter(|id| !live.contains_key(id))
            .copied()
            .collect();
        if !gone.is_empty() || live.len() != state.tables.len() {
            state.profile = None;
        }
        for id in gone {
            state.tables.remove(&id);
            if !state.unindexed.remove(&id) {
                state.index.remove(id).map_err(internal)?;
            }
        }
        for (&id, table) in &live {
            if !state.tables.insert(id) {
                continue;
            }
            match table.table.value_filter(record.id) {
                ValueLeaf::Present(leaf) if leaf.shape() == record.shape => {
                    state.index.insert(id, leaf).map_err(internal)?;
                }
                _ => {
                    state.unindexed.insert(id);
                }
            }
        }
        Ok(state)
    }
}
