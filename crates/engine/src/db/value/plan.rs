//! The planner of a search by value: probe first, then read the candidate
//! blocks or scan everything, whichever the measured costs say is cheaper.
//!
//! Probing the leaves and the block filters costs microseconds and tells
//! exactly which blocks may hold the value, so a search always probes.
//! What remains to decide is how to read:
//!
//! - **filtered**: read the candidate blocks, extract the values of their
//!   entries, and validate every key found against newer versions:
//!   `blocks · block + entries · entry + results · validate`;
//! - **scan**: one merged pass over the whole store, which sees only the
//!   newest version of each key and so validates nothing:
//!   `all blocks · block + all entries · scan_entry`.
//!
//! Filtered wins by far for selective values; for a value in most entries
//! it reads every block anyway and pays a validation per result, and the
//! scan wins. The per-unit costs are measured on the database itself
//! (`calibrate.rs`), again whenever its tables change.

use sift_value_index::planner::CostModel;

/// Measured costs of one index's searches, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Costs {
    /// Reading one data block from its file (through the OS cache) and
    /// checking it.
    pub block_ns: f64,
    /// Decoding one entry of a read block and extracting its values.
    pub entry_ns: f64,
    /// Checking one candidate key for newer versions.
    pub validate_ns: f64,
    /// One entry of a merged scan, extraction included.
    pub scan_entry_ns: f64,
    /// Probing the leaves: one leaf, one inner node, one row word.
    pub probe: CostModel,
}

impl Costs {
    /// Costs assumed before a measurement (an index without tables to
    /// sample): figures of the development machine, 2 shared cores
    /// (`sift-bench value-search`), with a JSON extractor.
    pub(super) const ASSUMED: Self = Self {
        block_ns: 3_000.0,
        entry_ns: 150.0,
        validate_ns: 400.0,
        scan_entry_ns: 300.0,
        probe: CostModel::DEFAULT,
    };
}

/// What a search would read, as the probes found it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Workload {
    /// Data blocks the filters could not rule out.
    pub candidate_blocks: u64,
    /// Entries in them (estimated from their tables' mean per block).
    pub candidate_entries: f64,
    /// Results expected from them: per candidate table, the value's count
    /// if it is one of the table's heavy hitters, else the mean count of
    /// the table's other values; at most its candidate entries.
    pub expected_results: f64,
    /// Entries of the memtables: the scan reads them all.
    pub memtable_entries: u64,
    /// Of those, the entries of memtables the filtered way reads whole
    /// (without postings of the index, or the value too common in them).
    pub memtable_entries_read: u64,
    /// Keys the filtered way looks up through the memtables' postings.
    pub memtable_postings: u64,
    /// Data blocks of the whole store.
    pub total_blocks: u64,
    /// Entries of every table.
    pub total_entries: u64,
}

/// The two estimates, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Estimate {
    /// Reading the candidate blocks and validating.
    pub filtered_ns: f64,
    /// Scanning the store.
    pub scan_ns: f64,
}

impl Estimate {
    /// Whether the scan is cheaper.
    pub(super) fn scan_wins(&self) -> bool {
        self.scan_ns < self.filtered_ns
    }
}

/// The estimates of both ways for `work` under `costs`.
///
/// A key looked up through a memtable's postings is charged as a
/// validation: both are point lookups.
pub(super) fn estimate(work: &Workload, costs: &Costs) -> Estimate {
    let lookups = work.expected_results + work.memtable_postings as f64;
    Estimate {
        filtered_ns: work.candidate_blocks as f64 * costs.block_ns
            + (work.candidate_entries + work.memtable_entries_read as f64) * costs.entry_ns
            + lookups * costs.validate_ns,
        scan_ns: work.total_blocks as f64 * costs.block_ns
            + (work.total_entries + work.memtable_entries) as f64 * costs.scan_entry_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(candidate_blocks: u64, per_block: f64, results: f64) -> Workload {
        Workload {
            candidate_blocks,
            candidate_entries: candidate_blocks as f64 * per_block,
            expected_results: results,
            memtable_entries: 0,
            memtable_entries_read: 0,
            memtable_postings: 0,
            total_blocks: 7_000,
            total_entries: 7_000 * 40,
        }
    }

    #[test]
    fn selective_values_read_their_blocks() {
        let costs = Costs::ASSUMED;
        for (blocks, results) in [(0, 0.0), (1, 1.0), (110, 110.0), (700, 2_000.0)] {
            let e = estimate(&store(blocks, 40.0, results), &costs);
            assert!(!e.scan_wins(), "{blocks} blocks: {e:?}");
        }
        let absent = estimate(&store(0, 40.0, 0.0), &costs);
        assert_eq!(absent.filtered_ns, 0.0);
    }

    #[test]
    fn a_value_in_most_entries_is_scanned() {
        // Every block is a candidate and half the entries are results: the
        // scan reads the same blocks and validates nothing.
        let costs = Costs::ASSUMED;
        let e = estimate(&store(7_000, 40.0, 140_000.0), &costs);
        assert!(e.scan_wins(), "{e:?}");
        // The same blocks with few results: reading them costs no more
        // than scanning, so the filters stay.
        let e = estimate(&store(7_000, 40.0, 10.0), &costs);
        assert!(!e.scan_wins(), "{e:?}");
    }

    #[test]
    fn memtables_cost_both_ways_the_same_entries() {
        let costs = Costs {
            entry_ns: 1.0,
            scan_entry_ns: 1.0,
            block_ns: 0.0,
            validate_ns: 0.0,
            probe: CostModel::DEFAULT,
        };
        let mut w = store(0, 0.0, 0.0);
        w.total_entries = 0;
        w.memtable_entries = 500;
        w.memtable_entries_read = 500;
        let e = estimate(&w, &costs);
        assert_eq!((e.filtered_ns, e.scan_ns), (500.0, 500.0));
    }

    #[test]
    fn memtable_postings_cost_a_lookup_each() {
        let costs = Costs {
            validate_ns: 3.0,
            ..Costs::ASSUMED
        };
        let mut w = store(0, 0.0, 0.0);
        w.total_entries = 0;
        w.total_blocks = 0;
        w.memtable_entries = 1_000;
        w.memtable_postings = 10;
        let e = estimate(&w, &costs);
        assert_eq!(e.filtered_ns, 30.0);
        assert_eq!(e.scan_ns, 1_000.0 * costs.scan_entry_ns);
    }
}
