//! The value indexes' leaves, arranged for search and kept in step with
//! the versions.
//!
//! Leaves are sized per table, so one index has leaves of several shapes;
//! the bit-sliced layout and the hierarchy of `sift-value-index` need one
//! shape, so each size class gets its own [`ValueIndex`], and a search
//! probes every class (classes are few: tables of one level hold similar
//! numbers of values, and classes are 12.5% apart, see `sizing.rs`). Each
//! search applies the difference between the tables the structures reflect
//! and the current version's, so a flush or compaction costs O(changed
//! tables x depth), never a rebuild.
//!
//! Each leaf is also probed once, when it joins, with a fixed sample of
//! values no table holds: the measured false-positive rate `Db::stats`
//! reports.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use sift_filter::{BloomShape, Filter, KeyHash, StandardBloom};
use sift_value_index::planner::CostModel;
use sift_value_index::{Method, ProbeStats, Profile, ValueIndex};

use super::plan::Costs;
use crate::db::lock;
use crate::error::{Error, Result};
use crate::sstable::ValueLeaf;
use crate::value_def::IndexRecord;
use crate::version::Version;

/// Hierarchy order used when the builder names none: a fan-out of 8 keeps
/// the tree shallow (3 levels over 500 tables) while an inner node's OR
/// covers few enough leaves to prune.
pub(in crate::db) const DEFAULT_ORDER: usize = 8;

/// Absent values each leaf is probed with when it joins: 1,024 probes at a
/// 1% rate give about 10 false positives per leaf, and the rates of all
/// leaves add up to a measurement whose binomial standard deviation is
/// `sqrt(p / (1024 · leaves))` (0.3 points for one leaf at 1%, 0.04 for 50).
const FPR_SAMPLE: usize = 1024;

/// The sampled absent values' hashes: values under a prefix no extractor
/// yields in practice (a 0xff byte starts no UTF-8 text), the same for
/// every leaf and every run.
fn absent_sample() -> &'static [KeyHash] {
    static SAMPLE: OnceLock<Vec<KeyHash>> = OnceLock::new();
    SAMPLE.get_or_init(|| {
        (0..FPR_SAMPLE as u64)
            .map(|i| {
                let mut value = b"\xffsift absent sample ".to_vec();
                value.extend_from_slice(&i.to_le_bytes());
                KeyHash::of(&value)
            })
            .collect()
    })
}

/// A size class of leaves: its shape, as an ordered key.
type Class = (u64, u32);

fn class_of(shape: BloomShape) -> Class {
    (shape.bits, shape.probes)
}

/// What is known of one readable leaf.
#[derive(Clone, Copy, Debug)]
pub(super) struct LeafInfo {
    /// Its shape (its class).
    pub shape: BloomShape,
    /// Sampled absent values it answered "maybe" for, of [`FPR_SAMPLE`].
    pub sampled_positives: u32,
}

/// One index's search structures.
#[derive(Debug)]
pub(super) struct IndexState {
    /// The definition the structures were built for.
    record: IndexRecord,
    order: usize,
    /// One search structure per leaf shape.
    classes: BTreeMap<Class, ValueIndex>,
    /// Tables with a readable leaf.
    pub indexed: BTreeMap<u64, LeafInfo>,
    /// Tables without a readable leaf (written before the index existed,
    /// or damaged): every search reads them.
    pub unindexed: BTreeSet<u64>,
    /// Per class, the planner's view of its leaves, computed on the first
    /// search after a change (it reads every leaf's bits).
    profiles: Option<Vec<Profile>>,
    /// Measured costs, re-measured on the first search after a change.
    pub costs: Option<Costs>,
    /// The version the structures reflect: a search on the same version
    /// has nothing to compare.
    synced: Weak<Version>,
    /// Data blocks and entries of every table of that version: what a
    /// scan would read.
    pub store_blocks: u64,
    pub store_entries: u64,
}

impl IndexState {
    fn new(record: IndexRecord, order: usize) -> Self {
        Self {
            record,
            order,
            classes: BTreeMap::new(),
            indexed: BTreeMap::new(),
            unindexed: BTreeSet::new(),
            profiles: None,
            costs: None,
            synced: Weak::new(),
            store_blocks: 0,
            store_entries: 0,
        }
    }

    /// Number of size classes.
    pub(super) fn classes(&self) -> usize {
        self.classes.len()
    }

    /// Each class's profile, recomputed only after the leaves changed.
    pub(super) fn profiles(&mut self) -> &[Profile] {
        let classes = &self.classes;
        self.profiles
            .get_or_insert_with(|| classes.values().map(ValueIndex::profile).collect())
    }

    /// The tables whose leaf may hold the value hashed to `hash`, probing
    /// each class by `method` (or, with `None`, by the method the
    /// planner finds cheapest for that class under `model`), sorted.
    /// Adds the work to `stats`.
    pub(super) fn search(
        &mut self,
        method: Option<Method>,
        model: &CostModel,
        hash: KeyHash,
        stats: &mut ProbeStats,
    ) -> (Vec<u64>, Method) {
        let methods: Vec<Method> = match method {
            Some(method) => vec![method; self.classes.len()],
            None => self
                .profiles()
                .iter()
                .map(|p| sift_value_index::planner::estimate(p, model).cheapest_probe())
                .collect(),
        };
        let mut out = Vec::new();
        for (class, &method) in self.classes.values().zip(&methods) {
            out.extend(class.search(method, hash, stats));
        }
        out.sort_unstable();
        // The method most classes used, for the report.
        let reported = Method::ALL
            .into_iter()
            .max_by_key(|m| methods.iter().filter(|x| *x == m).count())
            .unwrap_or(Method::Flat);
        (out, method.unwrap_or(reported))
    }

    /// Each class: its leaves, by table.
    pub(super) fn class_indexes(&self) -> impl Iterator<Item = &ValueIndex> {
        self.classes.values()
    }

    fn insert(&mut self, table: u64, leaf: Arc<StandardBloom>) -> Result<()> {
        let shape = leaf.shape();
        let positives = absent_sample()
            .iter()
            .filter(|&&h| leaf.may_contain(h))
            .count() as u32;
        let order = self.order;
        let class = match self.classes.entry(class_of(shape)) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(ValueIndex::new(shape, order).map_err(|e| internal(&self.record, e))?)
            }
        };
        class
            .insert(table, leaf)
            .map_err(|e| internal(&self.record, e))?;
        self.indexed.insert(
            table,
            LeafInfo {
                shape,
                sampled_positives: positives,
            },
        );
        Ok(())
    }

    fn remove(&mut self, table: u64) -> Result<()> {
        if self.unindexed.remove(&table) {
            return Ok(());
        }
        let Some(info) = self.indexed.remove(&table) else {
            return Ok(());
        };
        let key = class_of(info.shape);
        if let Some(class) = self.classes.get_mut(&key) {
            class.remove(table).map_err(|e| internal(&self.record, e))?;
            if class.is_empty() {
                self.classes.remove(&key);
            }
        }
        Ok(())
    }

    /// Every table the structures reflect.
    fn tables(&self) -> impl Iterator<Item = u64> + '_ {
        self.indexed.keys().chain(&self.unindexed).copied()
    }

    /// Measured leaf false-positive rate over the sampled absent values,
    /// and the number of probes it rests on.
    pub(super) fn measured_fpr(&self) -> (f64, u64) {
        let probes = (self.indexed.len() * FPR_SAMPLE) as u64;
        let positives: u64 = self
            .indexed
            .values()
            .map(|l| u64::from(l.sampled_positives))
            .sum();
        let rate = if probes == 0 {
            0.0
        } else {
            positives as f64 / probes as f64
        };
        (rate, probes)
    }
}

fn internal(record: &IndexRecord, e: sift_value_index::Error) -> Error {
    Error::Background(format!("value index {}: {e}", record.name))
}

/// The search structures of every value index, each behind its own lock:
/// a search holds only its index's, so it never waits for another index's
/// search or calibration (which reads blocks). The map's lock is held
/// only to find an index's entry.
#[derive(Debug)]
pub(in crate::db) struct IndexLeaves {
    order: usize,
    states: Mutex<BTreeMap<u64, Shared>>,
}

/// One index's structures, with the definition they were built for kept
/// outside their lock, so finding them never waits for a search.
#[derive(Debug)]
struct Shared {
    record: IndexRecord,
    state: Arc<Mutex<IndexState>>,
}

impl IndexLeaves {
    /// No index yet; hierarchies get fan-out `order`.
    pub(in crate::db) fn new(order: usize) -> Self {
        Self {
            order,
            states: Mutex::new(BTreeMap::new()),
        }
    }

    /// Forgets the structures of indexes not in `live` (dropped ones).
    pub(super) fn retain(&self, live: &[IndexRecord]) {
        lock(&self.states).retain(|id, _| live.iter().any(|r| r.id == *id));
    }

    /// How many indexes have search structures.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        lock(&self.states).len()
    }

    /// `record`'s structures (new ones if it has none, or if its
    /// definition changed); lock them, then [`IndexState::sync`] them.
    pub(super) fn of(&self, record: &IndexRecord) -> Arc<Mutex<IndexState>> {
        let mut states = lock(&self.states);
        let shared = states.entry(record.id).or_insert_with(|| Shared {
            record: record.clone(),
            state: Arc::new(Mutex::new(IndexState::new(record.clone(), self.order))),
        });
        if shared.record != *record {
            *shared = Shared {
                record: record.clone(),
                state: Arc::new(Mutex::new(IndexState::new(record.clone(), self.order))),
            };
        }
        Arc::clone(&shared.state)
    }
}

impl IndexState {
    /// Brings the structures in step with `version`.
    pub(super) fn sync(&mut self, version: &Arc<Version>) -> Result<()> {
        if std::ptr::eq(self.synced.as_ptr(), Arc::as_ptr(version)) {
            return Ok(());
        }
        let id = self.record.id;
        let live: BTreeMap<u64, _> = version.tables().map(|t| (t.meta.id, t)).collect();
        let gone: Vec<u64> = self.tables().filter(|id| !live.contains_key(id)).collect();
        let mut changed = !gone.is_empty();
        for id in gone {
            self.remove(id)?;
        }
        for (&table_id, table) in &live {
            if self.indexed.contains_key(&table_id) || self.unindexed.contains(&table_id) {
                continue;
            }
            changed = true;
            // A table that cannot be read is searched by reading it, which
            // reports the damage.
            let leaf = table
                .table()
                .map_or(ValueLeaf::Unreadable, |t| t.value_filter(id));
            match leaf {
                ValueLeaf::Present(leaf) => self.insert(table_id, leaf)?,
                ValueLeaf::Missing | ValueLeaf::Unreadable => {
                    self.unindexed.insert(table_id);
                }
            }
        }
        if changed {
            self.profiles = None;
            self.costs = None;
        }
        self.synced = Arc::downgrade(version);
        self.store_blocks = live
            .values()
            .map(|t| t.summary().map_or(0, |s| s.data_blocks))
            .sum();
        self.store_entries = live.values().map(|t| t.meta.entries).sum();
        Ok(())
    }
}
