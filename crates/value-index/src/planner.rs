//! The planner: a pure function from a [`Profile`] and a [`CostModel`] to
//! the cheapest search [`Method`].
//!
//! The three filter methods return the same candidates (the leaves whose
//! filter matches) and differ only in what they probe; `Scan` probes
//! nothing but scans every table. For one query with `n` leaves, `h`
//! leaves truly holding the value ([`Profile::leaves_holding_value`]), leaf
//! false-match chance `p` and table scan cost `T`:
//!
//! - candidates `E = h + (n - h) · p`, each scanned at cost `T`;
//! - `Scan`: `n · T`;
//! - `BloomScan`: `n` leaf probes `+ E · T`;
//! - `Flat`: `k · ceil(n / 64)` word ANDs `+ E · T`;
//! - `Hierarchy`: the root, then every child of each matching node. A node
//!   at depth `t` (one of `N_t`) matches with chance
//!   `q_t = 1 - (1 - f_t^k)(1 - s_t)`, where `f_t^k` is its false-match
//!   chance from its fill (saturated nodes: close to 1) and
//!   `s_t = 1 - (1 - 1/N_t)^h` the chance one of the `h` holders is below
//!   it; so `N_{t+1} · q_t` nodes are probed at depth `t + 1`, and
//!   `n · q_last` leaves, `+ E · T`.

use crate::profile::Profile;
use crate::stats::Method;

/// Machine costs, in nanoseconds. [`Default`] holds values measured on the
/// development machine (2 cores, x86-64) by `benches/search.rs`; see each
/// field. Callers that measure their own may pass them instead.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostModel {
    /// One leaf filter probe (`k` bit tests of an `m`-bit array).
    pub leaf_probe_ns: f64,
    /// One inner-node probe (the same test on a node's bits).
    pub inner_probe_ns: f64,
    /// One 64-bit word ANDed in the flat layout (per row, per probe).
    pub flat_word_ns: f64,
    /// Fixed cost of scanning one table (open an iterator, first block).
    pub scan_table_ns: f64,
    /// Cost per entry of scanning a table and comparing its value.
    pub scan_entry_ns: f64,
}

impl CostModel {
    /// Measured with `cargo bench -p sift-value-index` on the development
    /// machine (2 shared cores): 1000 leaves of m = 20,000 bits, k = 7,
    /// 64 absent values per batch; per-probe figures are batch time
    /// divided by the `ProbeStats` counts the bench prints.
    pub const DEFAULT: Self = Self {
        // `search_half_full/BloomScan`: 1.35 ms per 64 queries over
        // 1000 leaves at fill 0.5 = 21 ns a probe (2.5 MB of filters,
        // out of cache). Sparse leaves (fill 0.07) stop at the first
        // bit: 3.5 ns. The denser figure is the one that matters.
        leaf_probe_ns: 20.0,
        // `search_*/Hierarchy`: batch time over nodes + leaves probed:
        // 7.8 ns (sparse, d = 16) to 19.8 ns (half full, d = 4); inner
        // nodes are denser than leaves, so more bits are tested.
        inner_probe_ns: 15.0,
        // `search_*/Flat`: 85-137 ns a query for 7 rows of 16 words
        // (112 words), 0.8-1.2 ns a word with candidate extraction.
        flat_word_ns: 1.0,
        // Not measurable here (no tables): a table iterator seeks its
        // first block, roughly one point read in the engine (~2 µs);
        // the engine should pass its own figure.
        scan_table_ns: 2_000.0,
        // `scan/entries_10000`: 22 µs for 10,000 in-memory 100-byte
        // value compares = 2.2 ns an entry. A lower bound: the engine
        // also decodes blocks, so real scans cost more.
        scan_entry_ns: 2.2,
    };
}

impl Default for CostModel {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The estimated cost, in nanoseconds, of one query by each method.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimates {
    /// Expected candidate leaves of the filter methods (`E`).
    pub candidates: f64,
    /// [`Method::Scan`].
    pub scan: f64,
    /// [`Method::BloomScan`].
    pub bloom_scan: f64,
    /// [`Method::Hierarchy`].
    pub hierarchy: f64,
    /// [`Method::Flat`].
    pub flat: f64,
}

impl Estimates {
    /// The estimate for `method`.
    #[must_use]
    pub fn cost(&self, method: Method) -> f64 {
        match method {
            Method::Scan => self.scan,
            Method::BloomScan => self.bloom_scan,
            Method::Hierarchy => self.hierarchy,
            Method::Flat => self.flat,
        }
    }

    /// The cheapest method; ties go to the earlier of [`Method::ALL`].
    #[must_use]
    pub fn cheapest(&self) -> Method {
        self.cheapest_of(Method::ALL)
    }

    /// The cheapest method that probes the filters (never
    /// [`Method::Scan`]): for a caller that always probes, because probing
    /// costs microseconds and tells it exactly which tables to read, and
    /// decides on a scan afterwards, knowing the candidates.
    #[must_use]
    pub fn cheapest_probe(&self) -> Method {
        self.cheapest_of(Method::PROBES)
    }

    fn cheapest_of<const N: usize>(&self, methods: [Method; N]) -> Method {
        methods.into_iter().fold(methods[0], |best, m| {
            if self.cost(m) < self.cost(best) {
                m
            } else {
                best
            }
        })
    }
}

/// Expected probes of one hierarchy search: `(inner nodes, leaves)`.
#[must_use]
pub fn hierarchy_probes(profile: &Profile) -> (f64, f64) {
    let holders = profile.leaves_holding_value();
    let mut inner = 0.0;
    // Chance that the parent of a node at the current depth matched.
    let mut reach = 1.0;
    for level in &profile.inner_levels {
        let nodes = level.nodes.max(1) as f64;
        inner += nodes * reach;
        let holds = 1.0 - (1.0 - 1.0 / nodes).powf(holders);
        let false_match = level.mean_match.clamp(0.0, 1.0);
        reach = 1.0 - (1.0 - false_match) * (1.0 - holds);
    }
    let leaves = if profile.inner_levels.is_empty() {
        0.0
    } else {
        profile.leaves as f64 * reach
    };
    (inner, leaves)
}

/// Each method's estimated cost for one query against `profile`.
#[must_use]
pub fn estimate(profile: &Profile, model: &CostModel) -> Estimates {
    let n = profile.leaves as f64;
    let holders = profile.leaves_holding_value();
    let p = profile.mean_leaf_match.clamp(0.0, 1.0);
    let candidates = holders + (n - holders) * p;
    let table = model.scan_table_ns + model.scan_entry_ns * profile.mean_leaf_entries.max(0.0);
    let scan_candidates = candidates * table;
    let (inner, leaves) = hierarchy_probes(profile);
    let flat_words = f64::from(profile.probes) * profile.flat_words_per_row as f64;
    Estimates {
        candidates,
        scan: n * table,
        bloom_scan: n * model.leaf_probe_ns + scan_candidates,
        hierarchy: inner * model.inner_probe_ns + leaves * model.leaf_probe_ns + scan_candidates,
        flat: flat_words * model.flat_word_ns + scan_candidates,
    }
}

/// The method [`estimate`] finds cheapest.
#[must_use]
pub fn plan(profile: &Profile, model: &CostModel) -> Method {
    estimate(profile, model).cheapest()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hierarchy::InnerLevel;

    /// The profile of `n` leaves, each of `per_leaf` distinct values out of
    /// `total` overall (so `total = n · per_leaf` means unique values), in
    /// a complete hierarchy of order `d`, with fills from the Bloom
    /// formula `1 - e^{-k·values/m}`.
    fn synthetic(n: usize, d: usize, m: u64, k: u32, per_leaf: f64, total: f64) -> Profile {
        let fill = |values: f64| 1.0 - (-(f64::from(k)) * values / m as f64).exp();
        let mut inner_levels = Vec::new();
        let mut nodes = n.div_ceil(d);
        while nodes > 0 {
            // Leaves under one node at this level, and the distinct values
            // they hold together (capped by the total).
            let below = n as f64 / nodes as f64;
            let f = fill((per_leaf * below).min(total));
            inner_levels.push(InnerLevel {
                nodes,
                mean_fill: f,
                mean_match: f.powi(k as i32),
            });
            if nodes == 1 {
                break;
            }
            nodes = nodes.div_ceil(d);
        }
        inner_levels.reverse();
        let leaf_fill = fill(per_leaf);
        Profile {
            leaves: n,
            bits: m,
            probes: k,
            mean_leaf_fill: leaf_fill,
            mean_leaf_match: leaf_fill.powi(k as i32),
            mean_leaf_values: per_leaf,
            mean_leaf_entries: per_leaf,
            total_values: total,
            inner_levels,
            flat_words_per_row: n.div_ceil(64),
        }
    }

    #[test]
    fn unique_values_over_many_leaves_use_a_filter_structure() {
        let model = CostModel::default();
        for (n, d) in [(1_000, 8), (10_000, 16), (200, 4)] {
            let p = synthetic(n, d, 10_000, 7, 1_000.0, 1_000.0 * n as f64);
            let e = estimate(&p, &model);
            let method = e.cheapest();
            assert!(
                matches!(method, Method::Hierarchy | Method::Flat),
                "{n} leaves: {e:?}"
            );
            // One holder plus false matches at the leaves' FPR (~0.8%).
            assert!(e.candidates < 1.0 + 0.01 * n as f64, "{e:?}");
            assert!(e.bloom_scan > e.cost(method) && e.scan > 10.0 * e.cost(method));
        }
    }

    #[test]
    fn sparse_leaves_favour_the_hierarchy_and_dense_ones_the_flat_layout() {
        let model = CostModel::default();
        // 100,000 leaves of 10 values in 100k bits: the two levels under
        // the root are saturated, but nodes over a few hundred leaves
        // prune, so the hierarchy probes ~300 nodes plus the 16 leaves
        // beside the holder, while the flat layout ANDs 7 rows of 1563
        // words.
        let sparse = synthetic(100_000, 16, 100_000, 7, 10.0, 1e6);
        let (inner, leaves) = hierarchy_probes(&sparse);
        assert!(
            inner < 400.0 && (16.0..17.0).contains(&leaves),
            "{inner} {leaves}"
        );
        let e = estimate(&sparse, &model);
        assert_eq!(e.cheapest(), Method::Hierarchy, "{e:?}");
        // Leaves at 10 bits per value: inner nodes saturate, the hierarchy
        // probes nearly everything, the flat layout does not care.
        let dense = synthetic(10_000, 16, 10_000, 7, 1_000.0, 1e7);
        let (inner, leaves) = hierarchy_probes(&dense);
        assert!(leaves > 9_000.0 && inner > 600.0, "{inner} {leaves}");
        assert_eq!(plan(&dense, &model), Method::Flat);
    }

    #[test]
    fn saturated_leaves_are_scanned() {
        // 50,000 values into 10,000 bits with k = 7: leaves are all ones,
        // every leaf is a candidate, probing buys nothing.
        let p = synthetic(500, 8, 10_000, 7, 50_000.0, 2.5e7);
        assert!(p.mean_leaf_match > 0.999_999);
        let e = estimate(&p, &CostModel::default());
        assert_eq!(e.cheapest(), Method::Scan, "{e:?}");
        assert!(e.candidates > 499.9);
        // Nearly saturated (fill 0.999, match 0.994) is another matter:
        // pruning 3 of 500 table scans is worth 56 ns of flat ANDs.
        let nearly = synthetic(500, 8, 10_000, 7, 10_000.0, 5e6);
        assert_eq!(plan(&nearly, &CostModel::default()), Method::Flat);
    }

    #[test]
    fn values_in_every_leaf_are_scanned() {
        // Low cardinality: each leaf holds the same 50 values.
        let p = synthetic(1_000, 8, 10_000, 7, 50.0, 50.0);
        assert_eq!(p.leaves_holding_value(), 1_000.0);
        let e = estimate(&p, &CostModel::default());
        assert_eq!(e.cheapest(), Method::Scan);
        // A caller that always probes gets the cheapest probe: the flat
        // layout's 7 rows of 16 words cost less than 1,000 leaf probes.
        assert_eq!(e.cheapest_probe(), Method::Flat);
    }

    #[test]
    fn estimates_follow_the_formulas() {
        let model = CostModel {
            leaf_probe_ns: 10.0,
            inner_probe_ns: 5.0,
            flat_word_ns: 1.0,
            scan_table_ns: 100.0,
            scan_entry_ns: 1.0,
        };
        let mut p = synthetic(128, 4, 1_000, 2, 100.0, 12_800.0);
        p.mean_leaf_match = 0.0;
        p.mean_leaf_entries = 900.0;
        let e = estimate(&p, &model);
        assert_eq!(e.candidates, 1.0);
        assert_eq!(e.scan, 128.0 * 1_000.0);
        assert_eq!(e.bloom_scan, 1_280.0 + 1_000.0);
        assert_eq!(e.flat, 2.0 * 2.0 + 1_000.0);
        let (inner, leaves) = hierarchy_probes(&p);
        assert_eq!(e.hierarchy, inner * 5.0 + leaves * 10.0 + 1_000.0);
        for m in Method::ALL {
            assert!(e.cost(m) >= 1_000.0 || m == Method::Scan);
        }
        // An empty index costs nothing whichever way it is searched.
        let empty = estimate(&synthetic(0, 4, 1_000, 2, 0.0, 0.0), &model);
        assert_eq!((empty.scan, empty.flat, empty.candidates), (0.0, 0.0, 0.0));
    }
}
