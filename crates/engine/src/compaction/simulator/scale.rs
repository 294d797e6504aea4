//! The planner at scale: one plan over a leveled shape of 100,000 tables,
//! the shape of a large store in small tables (5M sequential keys in
//! 64 KiB tables made about 9,500). Planning once scanned the whole next
//! level for every table of a level, and a store that size spent its
//! settling time in the planner. Run with `--nocapture` for the time a
//! plan takes (the figure in docs/benchmarks.md, "Compaction planner").

use std::time::Instant;

use super::super::shape::Busy;
use super::super::shape::testkit::{one_run, t};
use super::super::{LevelShape, plan};
use crate::options::CompactionStyle;

/// `count` tables of `size` bytes covering keys `0..count * width` in key
/// order, each `width` keys wide, ids from `first_id`.
fn run_of(count: u64, width: u64, size: u64, first_id: u64) -> LevelShape {
    let key = |k: u64| format!("{k:012}");
    one_run(
        (0..count)
            .map(|i| {
                t(
                    first_id + i,
                    size,
                    &key(i * width),
                    &key((i + 1) * width - 1),
                )
            })
            .collect(),
    )
}

#[test]
fn a_plan_over_100_000_tables_is_a_binary_search_per_table() {
    const TABLE_BYTES: u64 = 64 << 10;
    // L1 is 2.25 times its target and L2 1.14 times, so the plan pushes
    // one of L1's 9,000 tables into L2's 91,000: every L1 table is
    // weighed against L2.
    let levels = vec![
        LevelShape::default(),
        run_of(9_000, 101, TABLE_BYTES, 1),
        run_of(91_000, 10, TABLE_BYTES, 100_000),
    ];
    let style = CompactionStyle::Leveled {
        l0_trigger: 4,
        size_ratio: 20,
        l1_bytes: 4_000 * TABLE_BYTES,
    };
    let busy = Busy::none();
    let mut times = Vec::new();
    let mut task = None;
    for _ in 0..5 {
        let start = Instant::now();
        task = plan(&levels, &style, &busy, TABLE_BYTES);
        times.push(start.elapsed());
    }
    times.sort();
    eprintln!(
        "planner, 100,000 tables (9,000 in L1, 91,000 in L2): median {:?} a plan",
        times[times.len() / 2]
    );
    let task = task.expect("L1 is over its target");
    assert_eq!(task.output_level, 2);
    let [(1, from_l1), (2, into_l2)] = &task.inputs[..] else {
        panic!("not an L1 -> L2 push: {task:?}");
    };
    assert_eq!(from_l1.len(), 1);
    // A 101-key table of L1 spans 11 or 12 of L2's 10-key tables.
    assert!((11..=12).contains(&into_l2.len()), "{task:?}");
}
