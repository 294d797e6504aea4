//! The planner of a search by value: probe first, then read the candidate
//! blocks, scan everything, or both (the newest sources whole, the older
//! runs by their candidate blocks), whichever the measured costs say is
//! cheapest.
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
//!   `all blocks · block + all entries · scan_entry`;
//! - **read whole** (a decision per run): the memtables and the first `p`
//!   runs in one merged pass, as the scan reads them, and the runs after
//!   by their candidate blocks. The merged pass meets every newer version
//!   of a key in key order, so a hit of run `p` needs no validation, and
//!   one of a later run is looked up only in the runs from `p` to it. Where
//!   a value is in most entries of a store, the deepest run is most of it:
//!   reading its blocks directly costs an entry each, where the scan's
//!   merge costs more, and the small newer runs spare it the lookups.
//!
//! Filtered wins by far for selective values; for a value in most entries
//! it reads every block anyway and pays a validation per result. The
//! per-unit costs are measured on the database itself (`calibrate.rs`),
//! again whenever its tables change.

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
#[derive(Clone, Debug, Default, PartialEq)]
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
    /// The same per run, in read order (newest first), for the plans that
    /// read some runs whole.
    pub runs: Vec<RunWork>,
}

/// One run's part of a [`Workload`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct RunWork {
    /// Its data blocks and entries.
    pub blocks: u64,
    pub entries: u64,
    /// Its candidate blocks, their entries, and the results expected.
    pub candidate_blocks: u64,
    pub candidate_entries: f64,
    pub expected_results: f64,
}

/// How a search reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Way {
    /// The candidate blocks, and the memtables' postings.
    Filtered,
    /// The memtables and the first `runs` runs whole, the rest by their
    /// candidate blocks.
    ReadWhole { runs: usize },
    /// Everything, merged.
    Scan,
}

/// The estimates, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Estimate {
    /// Reading the candidate blocks and validating.
    pub filtered_ns: f64,
    /// Scanning the store.
    pub scan_ns: f64,
    /// The cheapest plan that reads some runs whole, and its runs: `None`
    /// for a store without runs.
    pub read_whole: Option<(f64, usize)>,
}

impl Estimate {
    /// The cheapest way.
    pub(super) fn way(&self) -> Way {
        let mut best = (self.filtered_ns, Way::Filtered);
        if let Some((ns, runs)) = self.read_whole
            && ns < best.0
        {
            best = (ns, Way::ReadWhole { runs });
        }
        if self.scan_ns < best.0 {
            best = (self.scan_ns, Way::Scan);
        }
        best.1
    }
}

/// The estimates of every way for `work` under `costs`.
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
        read_whole: cheapest_read_whole(work, costs),
    }
}

/// The cheapest number of runs to read whole with the memtables (fewer
/// than all: all is the scan), and its estimate.
fn cheapest_read_whole(work: &Workload, costs: &Costs) -> Option<(f64, usize)> {
    let whole = |run: &RunWork| {
        run.blocks as f64 * costs.block_ns + run.entries as f64 * costs.scan_entry_ns
    };
    // A hit of the first run read by candidates is validated by the merged
    // pass; one of a later run is looked up in the runs between.
    let filtered = |run: &RunWork, first: bool| {
        run.candidate_blocks as f64 * costs.block_ns
            + run.candidate_entries * costs.entry_ns
            + if first {
                0.0
            } else {
                run.expected_results * costs.validate_ns
            }
    };
    let mut read_whole = work.memtable_entries as f64 * costs.scan_entry_ns;
    let mut best: Option<(f64, usize)> = None;
    for p in 0..work.runs.len() {
        let rest = work.runs.get(p..).unwrap_or_default();
        let ns = read_whole
            + rest
                .iter()
                .enumerate()
                .map(|(i, run)| filtered(run, i == 0))
                .sum::<f64>();
        if best.is_none_or(|(b, _)| ns < b) {
            best = Some((ns, p));
        }
        read_whole += work.runs.get(p).map_or(0.0, whole);
    }
    best
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
            runs: Vec::new(),
        }
    }

    #[test]
    fn selective_values_read_their_blocks() {
        let costs = Costs::ASSUMED;
        for (blocks, results) in [(0, 0.0), (1, 1.0), (110, 110.0), (700, 2_000.0)] {
            let e = estimate(&store(blocks, 40.0, results), &costs);
            assert_eq!(e.way(), Way::Filtered, "{blocks} blocks: {e:?}");
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
        assert_eq!(e.way(), Way::Scan, "{e:?}");
        // The same blocks with few results: reading them costs no more
        // than scanning, so the filters stay.
        let e = estimate(&store(7_000, 40.0, 10.0), &costs);
        assert_eq!(e.way(), Way::Filtered, "{e:?}");
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

    /// A store of a memtable with postings, a small newer run and a deep
    /// one 10 times its size, holding the value in `share` of their
    /// entries.
    fn two_runs(share: f64) -> Workload {
        // A selective value's results are in a block each; a common one is
        // in every block.
        let run = |blocks: u64| {
            let results = blocks as f64 * 40.0 * share;
            let candidate_blocks = (results.ceil() as u64).min(blocks);
            RunWork {
                blocks,
                entries: blocks * 40,
                candidate_blocks,
                candidate_entries: candidate_blocks as f64 * 40.0,
                expected_results: results,
            }
        };
        let runs = vec![run(700), run(7_000)];
        let sum = |f: fn(&RunWork) -> f64| runs.iter().map(f).sum::<f64>();
        Workload {
            candidate_blocks: sum(|r| r.candidate_blocks as f64) as u64,
            candidate_entries: sum(|r| r.candidate_entries),
            expected_results: sum(|r| r.expected_results),
            total_blocks: 7_700,
            total_entries: 7_700 * 40,
            memtable_entries: 50_000,
            memtable_postings: (50_000.0 * share) as u64,
            runs,
            ..Workload::default()
        }
    }

    #[test]
    fn a_common_value_reads_the_newer_runs_whole_and_the_deep_one_by_blocks() {
        let costs = Costs::ASSUMED;
        let e = estimate(&two_runs(0.5), &costs);
        assert_eq!(e.way(), Way::ReadWhole { runs: 1 }, "{e:?}");
        assert!(e.read_whole.unwrap().0 < e.scan_ns.min(e.filtered_ns));
        // A selective value: the memtable's postings beat reading it whole.
        let e = estimate(&two_runs(0.0001), &costs);
        assert_eq!(e.way(), Way::Filtered, "{e:?}");
    }

    #[test]
    fn reading_whole_charges_the_runs_before_and_validates_after_the_first_filtered() {
        let costs = Costs {
            block_ns: 0.0,
            entry_ns: 1.0,
            validate_ns: 10.0,
            scan_entry_ns: 2.0,
            probe: CostModel::DEFAULT,
        };
        let run = |entries: u64, results: f64| RunWork {
            blocks: 1,
            entries,
            candidate_blocks: 1,
            candidate_entries: entries as f64,
            expected_results: results,
        };
        let work = Workload {
            memtable_entries: 5,
            runs: vec![run(10, 1.0), run(100, 50.0)],
            ..Workload::default()
        };
        // p = 0: memtables whole (10), run 0 by blocks (10, no lookups),
        // run 1 by blocks (100) with 50 lookups (500): 620. p = 1: memtables
        // and run 0 whole (10 + 20), run 1 by blocks (100): 130.
        assert_eq!(cheapest_read_whole(&work, &costs), Some((130.0, 1)));
    }
}
