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

impl Default for CostModel {
    fn default() -> Self {
        Self {
            // bench `probe/leaf`: `may_contain` on 1000 filters of
            // 2^16 bits, k = 7, out of cache.
            leaf_probe_ns: 12.0,
            // bench `probe/inner`: the hierarchy's node test; same bits
            // and probes as a leaf, positions computed once per query.
            inner_probe_ns: 8.0,
            // bench `probe/flat_word`: one AND of a row word, k = 7 rows.
            flat_word_ns: 0.5,
            // Not measurable in this crate (no tables): a table iterator
            // seeks its first block, about one point read in the engine
            // (docs/benchmarks.md, readrandom ≈ 2 µs); the engine should
            // pass its own figure.
            scan_table_ns: 2_000.0,
            // bench `scan/entry`: compare one 100-byte value of an
            // in-memory entry, a lower bound for reading it from a block.
            scan_entry_ns: 5.0,
        }
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
        Method::ALL
            .into_iter()
            .fold(Method::ALL[0], |best, m| if self.cost(m) < self.cost(best) { m } else { best })
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
    let leaves = if profile.inner_levels.is_empty() { 0.0 } else { profile.leaves as f64 * reach };
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
