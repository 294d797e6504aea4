use super::*;
use crate::testutil::{SHAPE, leaf, value, workload_leaf};

#[test]
fn updates_keep_the_structures_in_sync_and_errors_change_nothing() {
    let mut ix = ValueIndex::new(SHAPE, 4).unwrap();
    for id in 0..50 {
        ix.insert(id, workload_leaf(id)).unwrap();
    }
    let other = BloomShape {
        bits: 4_096,
        probes: 4,
    };
    assert_eq!(
        ix.insert(99, leaf(other, [1])),
        Err(Error::ShapeMismatch {
            expected: SHAPE,
            found: other
        })
    );
    assert_eq!(ix.insert(7, workload_leaf(7)), Err(Error::DuplicateLeaf(7)));
    assert_eq!(ix.remove(77).unwrap_err(), Error::UnknownLeaf(77));
    assert_eq!(
        (ix.len(), ix.hierarchy().len(), ix.flat().len()),
        (50, 50, 50)
    );
    assert!(!ix.hierarchy().contains(99));
    for id in (0..50).step_by(3) {
        ix.remove(id).unwrap();
    }
    assert_eq!(
        (ix.len(), ix.hierarchy().len(), ix.flat().len()),
        (33, 33, 33)
    );
    ix.hierarchy().check_invariants().unwrap();
    assert!(matches!(
        ValueIndex::new(SHAPE, 0),
        Err(Error::InvalidOrder(0))
    ));
    let dup = ValueIndex::build(SHAPE, 3, [(1, workload_leaf(1)), (1, workload_leaf(2))]);
    assert_eq!(dup.unwrap_err(), Error::DuplicateLeaf(1));
}

#[test]
fn every_method_finds_every_inserted_value() {
    let ix = ValueIndex::build(SHAPE, 5, (0..80).map(|id| (id, workload_leaf(id)))).unwrap();
    for id in 0..80u64 {
        for v in (0..35).map(|j| 1_000_000 + id * 100 + j) {
            for method in Method::ALL {
                let found = ix.search(method, value(v), &mut ProbeStats::default());
                assert!(
                    found.binary_search(&id).is_ok(),
                    "{method:?} lost value {v} of leaf {id}"
                );
            }
        }
    }
}

#[test]
fn counts_per_method() {
    // Leaf 0 holds value 1; leaves 1..=3 are empty.
    let ix = ValueIndex::build(
        SHAPE,
        2,
        [
            (0, leaf(SHAPE, [1])),
            (1, leaf(SHAPE, [])),
            (2, leaf(SHAPE, [])),
            (3, leaf(SHAPE, [])),
        ],
    )
    .unwrap();
    let run = |method| {
        let mut stats = ProbeStats::default();
        let found = ix.search(method, value(1), &mut stats);
        (found, stats)
    };
    let s = |inner, leaves, positive, words| ProbeStats {
        inner_nodes_probed: inner,
        leaves_probed: leaves,
        leaves_positive: positive,
        words_anded: words,
    };
    assert_eq!(run(Method::Scan), (vec![0, 1, 2, 3], s(0, 0, 4, 0)));
    assert_eq!(run(Method::BloomScan), (vec![0], s(0, 4, 1, 0)));
    assert_eq!(run(Method::Hierarchy), (vec![0], s(3, 2, 1, 0)));
    assert_eq!(run(Method::Flat), (vec![0], s(0, 0, 1, 4)));
}

#[test]
fn profile_reflects_the_leaves() {
    let empty = ValueIndex::new(SHAPE, 4).unwrap().profile();
    assert_eq!(
        (empty.leaves, empty.mean_leaf_fill, empty.total_values),
        (0, 0.0, 0.0)
    );
    assert!(empty.inner_levels.is_empty());

    let ix = ValueIndex::build(SHAPE, 4, (0..64).map(|id| (id, workload_leaf(id)))).unwrap();
    let p = ix.profile();
    assert_eq!(
        (p.leaves, p.bits, p.probes, p.flat_words_per_row),
        (64, 2_048, 4, 1)
    );
    // 40 values · 4 probes into 2048 bits: fill ≈ 1 - e^{-160/2048} ≈ 0.075.
    assert!(
        (p.mean_leaf_fill - 0.075).abs() < 0.01,
        "{}",
        p.mean_leaf_fill
    );
    assert!(
        (p.mean_leaf_values - 40.0).abs() < 4.0,
        "{}",
        p.mean_leaf_values
    );
    assert!((p.mean_leaf_match - p.mean_leaf_fill.powi(4)).abs() < 1e-4);
    assert_eq!(
        p.inner_levels.iter().map(|l| l.nodes).collect::<Vec<_>>(),
        vec![1, 4, 16]
    );
    // Fill grows toward the root: the saturation the planner accounts for.
    let fills: Vec<f64> = p.inner_levels.iter().map(|l| l.mean_fill).collect();
    assert!(fills.windows(2).all(|w| w[0] > w[1]), "{fills:?}");
    assert!(p.total_values > 1_000.0, "{}", p.total_values);
}
