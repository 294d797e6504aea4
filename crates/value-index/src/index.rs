//! The facade: one value index's leaves, hierarchy and flat layout, kept
//! in sync.

use std::collections::BTreeMap;
use std::sync::Arc;

use sift_filter::{BloomShape, Filter, KeyHash, StandardBloom};

use crate::bitsliced::BitSliced;
use crate::error::{Error, Result};
use crate::hierarchy::Hierarchy;
use crate::planner::{self, CostModel};
use crate::probes::{Probes, count_ones};
use crate::profile::Profile;
use crate::stats::{Method, ProbeStats};

/// The leaves of one value index (one Bloom filter per table, keyed by
/// the table's file number) with both search structures over them.
///
/// Every update checks first and then changes the leaf map, the
/// [`Hierarchy`] and the [`BitSliced`] layout together, so all four
/// [`Method`]s always see the same leaf set.
#[derive(Clone, Debug)]
pub struct ValueIndex {
    shape: BloomShape,
    leaves: BTreeMap<u64, Arc<StandardBloom>>,
    hierarchy: Hierarchy,
    flat: BitSliced,
}

impl ValueIndex {
    /// An empty index for leaves of `shape`, with a hierarchy of order
    /// `order` (at least 2).
    pub fn new(shape: BloomShape, order: usize) -> Result<Self> {
        Ok(Self {
            shape,
            leaves: BTreeMap::new(),
            hierarchy: Hierarchy::new(shape, order)?,
            flat: BitSliced::new(shape)?,
        })
    }

    /// An index over `leaves`, its hierarchy bulk-built
    /// ([`Hierarchy::build`]). Errors on a shape mismatch or repeated id.
    pub fn build(
        shape: BloomShape,
        order: usize,
        leaves: impl IntoIterator<Item = (u64, Arc<StandardBloom>)>,
    ) -> Result<Self> {
        let leaves: Vec<(u64, Arc<StandardBloom>)> = leaves.into_iter().collect();
        let hierarchy = Hierarchy::build(shape, order, leaves.iter().cloned())?;
        let mut flat = BitSliced::new(shape)?;
        for (id, filter) in &leaves {
            flat.insert(*id, Arc::clone(filter))?;
        }
        Ok(Self {
            shape,
            leaves: leaves.into_iter().collect(),
            hierarchy,
            flat,
        })
    }

    /// Adds leaf `id`; `ShapeMismatch` or `DuplicateLeaf` change nothing.
    pub fn insert(&mut self, id: u64, filter: Arc<StandardBloom>) -> Result<()> {
        if filter.shape() != self.shape {
            return Err(Error::ShapeMismatch {
                expected: self.shape,
                found: filter.shape(),
            });
        }
        if self.leaves.contains_key(&id) {
            return Err(Error::DuplicateLeaf(id));
        }
        // Both structures accept what passed the checks above.
        self.hierarchy.insert(id, Arc::clone(&filter))?;
        self.flat.insert(id, Arc::clone(&filter))?;
        self.leaves.insert(id, filter);
        Ok(())
    }

    /// Removes leaf `id` and returns its filter; `UnknownLeaf` if absent.
    pub fn remove(&mut self, id: u64) -> Result<Arc<StandardBloom>> {
        let filter = self.leaves.remove(&id).ok_or(Error::UnknownLeaf(id))?;
        self.hierarchy.remove(id)?;
        self.flat.remove(id)?;
        Ok(filter)
    }

    /// The shape every leaf has.
    #[must_use]
    pub fn shape(&self) -> BloomShape {
        self.shape
    }

    /// Number of leaves.
    #[must_use]
    pub fn len(&self) -> usize {
        self.leaves.len()
    }

    /// Whether the index has no leaf.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.leaves.is_empty()
    }

    /// The leaves, by id.
    #[must_use]
    pub fn leaves(&self) -> &BTreeMap<u64, Arc<StandardBloom>> {
        &self.leaves
    }

    /// The hierarchy over the leaves.
    #[must_use]
    pub fn hierarchy(&self) -> &Hierarchy {
        &self.hierarchy
    }

    /// The bit-sliced layout of the leaves.
    #[must_use]
    pub fn flat(&self) -> &BitSliced {
        &self.flat
    }

    /// The ids, sorted, of the leaves that may hold the value hashed to
    /// `hash`. `Scan` returns every leaf; the other methods exactly the
    /// leaves whose filter says "maybe" (never missing one that holds the
    /// value). Adds the work done to `stats`.
    #[must_use]
    pub fn search(&self, method: Method, hash: KeyHash, stats: &mut ProbeStats) -> Vec<u64> {
        let mut out = Vec::new();
        match method {
            Method::Scan => {
                out.extend(self.leaves.keys());
                stats.leaves_positive += out.len() as u64;
                return out;
            }
            Method::BloomScan => {
                let probes = Probes::new(self.shape, hash);
                for (id, filter) in &self.leaves {
                    stats.leaves_probed += 1;
                    if probes.matches(filter.words()) {
                        stats.leaves_positive += 1;
                        out.push(*id);
                    }
                }
                return out;
            }
            Method::Hierarchy => {
                self.hierarchy
                    .search_probes(&Probes::new(self.shape, hash), stats, &mut out);
            }
            Method::Flat => {
                self.flat
                    .search_probes(&Probes::new(self.shape, hash), stats, &mut out);
            }
        }
        out.sort_unstable();
        out
    }

    /// Sizes and fill ratios for the planner: one pass over the leaves and
    /// the inner nodes.
    #[must_use]
    pub fn profile(&self) -> Profile {
        let (m, k) = (self.shape.bits, self.shape.probes);
        let n = self.leaves.len();
        let mean = |f: &dyn Fn(&StandardBloom) -> f64| {
            if n == 0 {
                0.0
            } else {
                self.leaves.values().map(|l| f(l)).sum::<f64>() / n as f64
            }
        };
        let mean_leaf_values = mean(&|l| Profile::values_from_bits(m, k, count_ones(l.words())));
        let total_values = self.hierarchy.root_bits().map_or(0.0, |root| {
            Profile::values_from_bits(m, k, count_ones(root))
        });
        Profile {
            leaves: n,
            bits: m,
            probes: k,
            mean_leaf_fill: mean(&|l| l.fill_ratio()),
            mean_leaf_match: mean(&|l| l.estimated_fpr()),
            mean_leaf_values,
            mean_leaf_entries: mean_leaf_values,
            total_values,
            inner_levels: self.hierarchy.inner_levels(),
            flat_words_per_row: self.flat.words_per_row(),
        }
    }

    /// The method the planner finds cheapest for this index under `model`.
    #[must_use]
    pub fn plan(&self, model: &CostModel) -> Method {
        planner::plan(&self.profile(), model)
    }
}

#[cfg(test)]
mod tests;
