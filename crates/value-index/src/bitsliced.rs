//! The flat, bit-sliced layout: bit `j` of every leaf stored together.
//!
//! Row `j` holds one bit per leaf column: set when that leaf's filter has
//! bit `j` set. A search ANDs the `k` rows its probes name; the columns
//! still set are exactly the leaves whose filter says "maybe". The cost is
//! `k · ceil(columns / 64)` word ANDs whatever the leaves hold: unlike a
//! hierarchy's inner nodes, nothing here is an OR of many leaves, so
//! nothing saturates. (The bit-sliced signature files of Faloutsos &
//! Christodoulakis 1984 store bits the same way.)

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use sift_filter::{BloomShape, KeyHash, StandardBloom};

use crate::error::{Error, Result, check_shape};
use crate::probes::Probes;
use crate::stats::ProbeStats;

/// Leaves of one [`BloomShape`] stored as `m` rows of column bits, with
/// per-column insert and remove.
#[derive(Clone, Debug)]
pub struct BitSliced {
    shape: BloomShape,
    /// Words per row; the layout holds `64 · row_words` columns.
    row_words: usize,
    /// `m` rows of `row_words` words, row after row.
    rows: Vec<u64>,
    /// Column -> the leaf in it; `None` for a free slot. Never ends with
    /// `None`: trailing free slots are dropped so searches read only
    /// `ceil(columns.len() / 64)` words per row.
    columns: Vec<Option<(u64, Arc<StandardBloom>)>>,
    /// Free columns below `columns.len()`; the lowest is reused first to
    /// keep live columns dense.
    free: BTreeSet<usize>,
    column_of: HashMap<u64, usize>,
}

impl BitSliced {
    /// An empty layout for leaves of `shape`.
    pub fn new(shape: BloomShape) -> Result<Self> {
        check_shape(shape)?;
        Ok(Self {
            shape,
            row_words: 0,
            rows: Vec::new(),
            columns: Vec::new(),
            free: BTreeSet::new(),
            column_of: HashMap::new(),
        })
    }

    /// The shape every leaf has.
    #[must_use]
    pub fn shape(&self) -> BloomShape {
        self.shape
    }

    /// Number of leaves.
    #[must_use]
    pub fn len(&self) -> usize {
        self.column_of.len()
    }

    /// Whether no leaf is stored.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.column_of.is_empty()
    }

    /// Words a search ANDs per probed row: `ceil(columns in use / 64)`,
    /// counting free slots below the highest live column.
    #[must_use]
    pub fn words_per_row(&self) -> usize {
        self.columns.len().div_ceil(64)
    }

    /// Adds leaf `id`; errors (changing nothing) on a shape mismatch or an
    /// id already present. Costs `O(m / 64 + set bits)`, plus an
    /// amortised re-layout when the column capacity doubles.
    pub fn insert(&mut self, id: u64, filter: Arc<StandardBloom>) -> Result<()> {
        if filter.shape() != self.shape {
            return Err(Error::ShapeMismatch {
                expected: self.shape,
                found: filter.shape(),
            });
        }
        if self.column_of.contains_key(&id) {
            return Err(Error::DuplicateLeaf(id));
        }
        let column = match self.free.pop_first() {
            Some(c) => c,
            None => {
                self.columns.push(None);
                self.columns.len() - 1
            }
        };
        if column >= self.row_words * 64 {
            self.relayout((self.row_words * 2).max(1));
        }
        self.flip_column(column, &filter, true);
        self.columns[column] = Some((id, filter));
        self.column_of.insert(id, column);
        Ok(())
    }

    /// Removes leaf `id`, clearing its column, and returns its filter;
    /// `UnknownLeaf` (changing nothing) if absent. Costs `O(set bits)`;
    /// the rows shrink to half once a quarter of the capacity is in use.
    pub fn remove(&mut self, id: u64) -> Result<Arc<StandardBloom>> {
        let Some(column) = self.column_of.remove(&id) else {
            return Err(Error::UnknownLeaf(id));
        };
        let Some((_, filter)) = self.columns[column].take() else {
            return Err(Error::UnknownLeaf(id));
        };
        self.flip_column(column, &filter, false);
        self.free.insert(column);
        while let Some(None) = self.columns.last() {
            self.columns.pop();
            self.free.remove(&self.columns.len());
        }
        let mut row_words = self.row_words;
        while row_words > 1 && self.columns.len() <= row_words * 16 {
            row_words /= 2;
        }
        if row_words != self.row_words {
            self.relayout(row_words);
        }
        Ok(filter)
    }

    /// The ids of the leaves whose filter may hold `hash`, sorted. Adds
    /// the words it ANDed and the leaves it returned to `stats`.
    #[must_use]
    pub fn search(&self, hash: KeyHash, stats: &mut ProbeStats) -> Vec<u64> {
        let mut out = Vec::new();
        self.search_probes(&Probes::new(self.shape, hash), stats, &mut out);
        out.sort_unstable();
        out
    }

    /// Appends the matching leaf ids, in column order, to `out`.
    pub(crate) fn search_probes(
        &self,
        probes: &Probes,
        stats: &mut ProbeStats,
        out: &mut Vec<u64>,
    ) {
        let words = self.words_per_row();
        let Some((&first, rest)) = probes.positions().split_first() else {
            return;
        };
        if words == 0 {
            return;
        }
        let mut acc: Vec<u64> = self.row(first)[..words].to_vec();
        for &p in rest {
            for (a, r) in acc.iter_mut().zip(self.row(p)) {
                *a &= r;
            }
        }
        stats.words_anded += (probes.positions().len() * words) as u64;
        for (w, mut word) in acc.into_iter().enumerate() {
            while word != 0 {
                let column = w * 64 + word.trailing_zeros() as usize;
                word &= word - 1;
                if let Some(Some((id, _))) = self.columns.get(column) {
                    stats.leaves_positive += 1;
                    out.push(*id);
                }
            }
        }
    }

    /// Row `j` (`j < m`).
    fn row(&self, j: u64) -> &[u64] {
        let start = j as usize * self.row_words;
        &self.rows[start..start + self.row_words]
    }

    /// Sets (or clears) `column` in every row where `filter` has a bit.
    fn flip_column(&mut self, column: usize, filter: &StandardBloom, set: bool) {
        let (word, mask) = (column / 64, 1u64 << (column % 64));
        for (w, &bits) in filter.words().iter().enumerate() {
            let mut bits = bits;
            while bits != 0 {
                let j = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let at = &mut self.rows[j * self.row_words + word];
                if set {
                    *at |= mask;
                } else {
                    *at &= !mask;
                }
            }
        }
    }

    /// Copies the rows into a layout of `row_words` words per row (which
    /// must still fit every live column).
    fn relayout(&mut self, row_words: usize) {
        let m = self.shape.bits as usize;
        let mut rows = vec![0; m * row_words];
        let keep = row_words.min(self.row_words);
        if keep > 0 {
            for (new, old) in rows
                .chunks_exact_mut(row_words)
                .zip(self.rows.chunks_exact(self.row_words))
            {
                new[..keep].copy_from_slice(&old[..keep]);
            }
        }
        self.rows = rows;
        self.row_words = row_words;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use sift_filter::Filter;

    use super::*;
    use crate::testutil::{Rng, SHAPE, leaf, value, workload_leaf};

    #[test]
    fn errors_change_nothing() {
        let mut b = BitSliced::new(SHAPE).unwrap();
        b.insert(3, leaf(SHAPE, [1])).unwrap();
        let other = BloomShape {
            bits: 64,
            probes: 4,
        };
        assert!(matches!(
            b.insert(4, leaf(other, [1])),
            Err(Error::ShapeMismatch { .. })
        ));
        assert_eq!(b.insert(3, leaf(SHAPE, [2])), Err(Error::DuplicateLeaf(3)));
        assert_eq!(b.remove(5).unwrap_err(), Error::UnknownLeaf(5));
        assert_eq!(b.len(), 1);
        assert_eq!(b.search(value(1), &mut ProbeStats::default()), vec![3]);
        assert!(BitSliced::new(BloomShape { bits: 0, probes: 1 }).is_err());
    }

    #[test]
    fn counts_words_and_positives() {
        let mut b = BitSliced::new(SHAPE).unwrap();
        let mut stats = ProbeStats::default();
        assert!(b.search(value(1), &mut stats).is_empty());
        assert_eq!(stats, ProbeStats::default());
        for id in 0..70 {
            b.insert(id, leaf(SHAPE, [id % 2])).unwrap();
        }
        assert_eq!(b.words_per_row(), 2);
        assert_eq!(
            b.search(value(1), &mut stats),
            (1..70).step_by(2).collect::<Vec<_>>()
        );
        let expected = ProbeStats {
            words_anded: 4 * 2,
            leaves_positive: 35,
            ..ProbeStats::default()
        };
        assert_eq!(stats, expected);
    }

    #[test]
    fn columns_are_reused_and_rows_shrink() {
        let mut b = BitSliced::new(SHAPE).unwrap();
        for id in 0..200 {
            b.insert(id, leaf(SHAPE, [id])).unwrap();
        }
        assert_eq!(b.words_per_row(), 4);
        for id in 10..200 {
            b.remove(id).unwrap();
        }
        assert_eq!((b.words_per_row(), b.row_words), (1, 1));
        b.remove(3).unwrap();
        b.insert(500, leaf(SHAPE, [500])).unwrap();
        assert_eq!(b.column_of[&500], 3, "lowest free column reused");
        assert_eq!(
            b.search(value(3), &mut ProbeStats::default()),
            Vec::<u64>::new()
        );
        assert_eq!(b.search(value(500), &mut ProbeStats::default()), vec![500]);
        for id in [0, 1, 2, 4, 5, 6, 7, 8, 9, 500] {
            b.remove(id).unwrap();
        }
        assert!(b.is_empty() && b.columns.is_empty() && b.free.is_empty());
        assert!(
            b.rows.iter().all(|&w| w == 0),
            "removed columns leave no bits"
        );
    }

    #[test]
    fn answers_like_each_leaf_across_updates() {
        let mut rng = Rng(11);
        let mut b = BitSliced::new(SHAPE).unwrap();
        let mut leaves = BTreeMap::new();
        for step in 0..800 {
            let id = rng.below(300);
            if let Some(f) = leaves.remove(&id) {
                assert!(Arc::ptr_eq(&b.remove(id).unwrap(), &f));
            } else {
                let f = workload_leaf(id);
                b.insert(id, Arc::clone(&f)).unwrap();
                leaves.insert(id, f);
            }
            if step % 100 == 99 {
                for v in (0..25).chain(1_000_000..1_030_000).step_by(11) {
                    let want: Vec<u64> = leaves
                        .iter()
                        .filter(|(_, f)| f.may_contain(value(v)))
                        .map(|(id, _)| *id)
                        .collect();
                    assert_eq!(b.search(value(v), &mut ProbeStats::default()), want);
                }
            }
        }
    }
}
