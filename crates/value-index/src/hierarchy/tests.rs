use std::collections::BTreeMap;
use std::sync::Arc;

use sift_filter::{BloomShape, Filter, StandardBloom};

use super::*;
use crate::testutil::{Rng, SHAPE, leaf, value, workload_leaf};

/// The leaves of `leaves` whose own filter may hold value `v`.
fn model(leaves: &BTreeMap<u64, Arc<StandardBloom>>, v: u64) -> Vec<u64> {
    leaves
        .iter()
        .filter(|(_, f)| f.may_contain(value(v)))
        .map(|(id, _)| *id)
        .collect()
}

#[test]
fn order_and_shape_are_validated() {
    assert_eq!(
        Hierarchy::new(SHAPE, 1).unwrap_err(),
        Error::InvalidOrder(1)
    );
    let bad = BloomShape { bits: 0, probes: 1 };
    assert_eq!(
        Hierarchy::new(bad, 4).unwrap_err(),
        Error::InvalidShape(bad)
    );
}

#[test]
fn errors_change_nothing() {
    let mut h = Hierarchy::new(SHAPE, 3).unwrap();
    h.insert(1, leaf(SHAPE, [1])).unwrap();
    let other = BloomShape {
        bits: 1_024,
        probes: 4,
    };
    assert_eq!(
        h.insert(2, leaf(other, [2])),
        Err(Error::ShapeMismatch {
            expected: SHAPE,
            found: other
        })
    );
    assert_eq!(h.insert(1, leaf(SHAPE, [3])), Err(Error::DuplicateLeaf(1)));
    assert_eq!(h.remove(9).unwrap_err(), Error::UnknownLeaf(9));
    assert_eq!(h.len(), 1);
    assert_eq!(
        h.search(value(3), &mut ProbeStats::default()),
        Vec::<u64>::new()
    );
    h.check_invariants().unwrap();

    let dup = Hierarchy::build(SHAPE, 3, [(4, leaf(SHAPE, [1])), (4, leaf(SHAPE, [2]))]);
    assert_eq!(dup.unwrap_err(), Error::DuplicateLeaf(4));
    let mixed = Hierarchy::build(SHAPE, 3, [(4, leaf(SHAPE, [1])), (5, leaf(other, [2]))]);
    assert!(matches!(mixed, Err(Error::ShapeMismatch { .. })));
}

#[test]
fn empty_hierarchy_finds_nothing() {
    let h = Hierarchy::build(SHAPE, 4, []).unwrap();
    let mut stats = ProbeStats::default();
    assert!(h.search(value(1), &mut stats).is_empty());
    assert_eq!(stats, ProbeStats::default());
    assert_eq!((h.depth(), h.root_bits(), h.is_empty()), (0, None, true));
    assert!(h.inner_levels().is_empty());
    h.check_invariants().unwrap();
}

#[test]
fn counts_on_a_hand_built_tree() {
    // Order 2 over four leaves: root -> A(0, 1), B(2, 3). Only leaf 0 holds
    // a value; the others are empty, so nothing below B can match.
    let h = Hierarchy::build(
        SHAPE,
        2,
        [
            (0, leaf(SHAPE, [7])),
            (1, leaf(SHAPE, [])),
            (2, leaf(SHAPE, [])),
            (3, leaf(SHAPE, [])),
        ],
    )
    .unwrap();
    h.check_invariants().unwrap();
    assert_eq!(h.depth(), 2);
    let mut stats = ProbeStats::default();
    assert_eq!(h.search(value(7), &mut stats), vec![0]);
    let expected = ProbeStats {
        inner_nodes_probed: 3,
        leaves_probed: 2,
        leaves_positive: 1,
        words_anded: 0,
    };
    assert_eq!(stats, expected);
    // An absent value stops at the root (leaf 0's FPR here is ~1e-11).
    assert!(!leaf(SHAPE, [7]).may_contain(value(8)));
    let mut absent = ProbeStats::default();
    assert!(h.search(value(8), &mut absent).is_empty());
    assert_eq!(
        absent,
        ProbeStats {
            inner_nodes_probed: 1,
            ..ProbeStats::default()
        }
    );
    let levels = h.inner_levels();
    assert_eq!(
        levels.iter().map(|l| l.nodes).collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert!(levels[1].mean_fill > 0.0 && levels[1].mean_fill < 4.0 / 2_048.0 / 2.0 + 1e-12);
}

#[test]
fn a_single_leaf_comes_and_goes() {
    let mut h = Hierarchy::new(SHAPE, 2).unwrap();
    h.insert(5, leaf(SHAPE, [1, 2])).unwrap();
    h.check_invariants().unwrap();
    assert_eq!(h.search(value(2), &mut ProbeStats::default()), vec![5]);
    assert_eq!(h.root_bits(), Some(leaf(SHAPE, [1, 2]).words()));
    let back = h.remove(5).unwrap();
    assert!(back.may_contain(value(1)));
    assert!(h.is_empty());
    h.check_invariants().unwrap();
}

#[test]
fn depth_stays_logarithmic_while_growing() {
    let mut h = Hierarchy::new(SHAPE, 10).unwrap();
    for id in 0..1_000 {
        h.insert(id, workload_leaf(id)).unwrap();
    }
    h.check_invariants().unwrap();
    assert!(h.depth() <= 4, "depth {}", h.depth());
    let built = Hierarchy::build(SHAPE, 10, (0..1_000).map(|id| (id, workload_leaf(id)))).unwrap();
    built.check_invariants().unwrap();
    assert_eq!(built.depth(), 3);
}

#[test]
fn build_keeps_every_size_within_bounds() {
    for order in [2, 3, 5, 10] {
        for n in 0..60 {
            let h =
                Hierarchy::build(SHAPE, order, (0..n).map(|id| (id, leaf(SHAPE, [id])))).unwrap();
            h.check_invariants()
                .unwrap_or_else(|e| panic!("order {order}, {n} leaves: {e}"));
            assert_eq!(h.len(), n as usize);
        }
    }
}

#[test]
fn incremental_updates_match_a_fresh_build() {
    for order in [2, 3, 5, 10] {
        let mut rng = Rng(order as u64);
        let mut h = Hierarchy::new(SHAPE, order).unwrap();
        let mut leaves = BTreeMap::new();
        for step in 0..600 {
            let id = rng.below(120);
            if leaves.contains_key(&id) && rng.below(3) != 0 {
                h.remove(id).unwrap();
                leaves.remove(&id);
            } else if let std::collections::btree_map::Entry::Vacant(slot) = leaves.entry(id) {
                let f = workload_leaf(id);
                h.insert(id, Arc::clone(&f)).unwrap();
                slot.insert(f);
            }
            h.check_invariants()
                .unwrap_or_else(|e| panic!("order {order}, step {step}: {e}"));
            if step % 50 != 49 {
                continue;
            }
            let fresh = Hierarchy::build(SHAPE, order, leaves.clone()).unwrap();
            assert_eq!(h.root_bits(), fresh.root_bits(), "order {order}");
            for v in (0..30).chain(1_000_000..1_000_000 + 12_000).step_by(7) {
                let want = model(&leaves, v);
                assert_eq!(
                    h.search(value(v), &mut ProbeStats::default()),
                    want,
                    "value {v}"
                );
                assert_eq!(
                    fresh.search(value(v), &mut ProbeStats::default()),
                    want,
                    "value {v}"
                );
            }
        }
        while let Some((&id, _)) = leaves.iter().next() {
            h.remove(id).unwrap();
            leaves.remove(&id);
            h.check_invariants().unwrap();
        }
        assert!(h.is_empty());
    }
}
