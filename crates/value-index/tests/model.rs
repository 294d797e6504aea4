//! Model-based tests: every method against probing each leaf directly,
//! across random insert/remove sequences, and incremental hierarchies
//! against ones built from scratch.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::sync::Arc;

use proptest::prelude::*;
use sift_filter::{Filter, mix64};
use sift_value_index::{
    BloomShape, Hierarchy, KeyHash, Method, ProbeStats, StandardBloom, ValueIndex,
};

/// Small filters so that false positives and saturated nodes occur.
const SHAPE: BloomShape = BloomShape {
    bits: 512,
    probes: 3,
};

fn value(v: u64) -> KeyHash {
    KeyHash::of(&v.to_le_bytes())
}

/// Leaf `id` drawn from `seed` (a re-inserted id gets other values):
/// `1 + seed % 60` values from a pool of 400, so some are shared.
#[expect(clippy::unwrap_used, reason = "test helper; SHAPE is valid")]
fn leaf(id: u64, seed: u64) -> Arc<StandardBloom> {
    let mut f = StandardBloom::new(SHAPE).unwrap();
    for j in 0..1 + seed % 60 {
        f.insert(value(mix64(seed ^ (id << 20) ^ j) % 400));
    }
    Arc::new(f)
}

/// The leaves whose own filter may hold `hash`: the model.
fn model(leaves: &BTreeMap<u64, Arc<StandardBloom>>, hash: KeyHash) -> Vec<u64> {
    leaves
        .iter()
        .filter(|(_, f)| f.may_contain(hash))
        .map(|(id, _)| *id)
        .collect()
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u64, u64),
    Remove(u64),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            3 => (0..80u64, any::<u64>()).prop_map(|(id, seed)| Op::Insert(id, seed)),
            2 => (0..80u64).prop_map(Op::Remove),
        ],
        1..150,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_method_matches_the_model(order in prop::sample::select(vec![2usize, 3, 5, 10]), ops in ops()) {
        let mut ix = ValueIndex::new(SHAPE, order).unwrap();
        let mut leaves = BTreeMap::new();
        for op in ops {
            match op {
                Op::Insert(id, seed) => {
                    let f = leaf(id, seed);
                    let got = ix.insert(id, Arc::clone(&f));
                    match leaves.entry(id) {
                        Entry::Occupied(_) => {
                            prop_assert_eq!(got, Err(sift_value_index::Error::DuplicateLeaf(id)));
                        }
                        Entry::Vacant(slot) => {
                            prop_assert!(got.is_ok());
                            slot.insert(f);
                        }
                    }
                }
                Op::Remove(id) => {
                    let got = ix.remove(id);
                    prop_assert_eq!(got.is_ok(), leaves.remove(&id).is_some());
                }
            }
            ix.hierarchy().check_invariants().map_err(TestCaseError::fail)?;
        }
        let ids: Vec<u64> = leaves.keys().copied().collect();
        for v in 0..450 {
            let want = model(&leaves, value(v));
            for method in [Method::BloomScan, Method::Hierarchy, Method::Flat] {
                let mut stats = ProbeStats::default();
                prop_assert_eq!(&ix.search(method, value(v), &mut stats), &want, "{:?}", method);
                prop_assert_eq!(stats.leaves_positive, want.len() as u64);
            }
            prop_assert_eq!(&ix.search(Method::Scan, value(v), &mut ProbeStats::default()), &ids);
        }
    }

    #[test]
    fn incremental_hierarchy_equals_a_fresh_build(order in prop::sample::select(vec![2usize, 3, 5, 10]), ops in ops()) {
        let mut h = Hierarchy::new(SHAPE, order).unwrap();
        let mut leaves = BTreeMap::new();
        for op in ops {
            match op {
                Op::Insert(id, seed) if !leaves.contains_key(&id) => {
                    let f = leaf(id, seed);
                    h.insert(id, Arc::clone(&f)).unwrap();
                    leaves.insert(id, f);
                }
                Op::Remove(id) if leaves.remove(&id).is_some() => {
                    h.remove(id).unwrap();
                }
                _ => {}
            }
        }
        let fresh = Hierarchy::build(SHAPE, order, leaves.clone()).unwrap();
        h.check_invariants().map_err(TestCaseError::fail)?;
        fresh.check_invariants().map_err(TestCaseError::fail)?;
        prop_assert_eq!(h.root_bits(), fresh.root_bits());
        prop_assert_eq!(h.len(), fresh.len());
        for v in 0..450 {
            let mut a = ProbeStats::default();
            let mut b = ProbeStats::default();
            let (x, y) = (h.search(value(v), &mut a), fresh.search(value(v), &mut b));
            prop_assert_eq!(&x, &y);
            prop_assert_eq!(a.leaves_positive, b.leaves_positive);
        }
    }
}

/// Fixed seeds: 300 leaves of 50 values each over 1,000 random updates;
/// every value a present leaf was given is found by every method.
#[test]
fn no_false_negatives_for_inserted_values() {
    let shape = BloomShape {
        bits: 1_024,
        probes: 5,
    };
    for order in [2, 3, 5, 10] {
        let mut ix = ValueIndex::new(shape, order).unwrap();
        let mut held: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for step in 0..1_000u64 {
            let id = mix64(step ^ (order as u64) << 32) % 300;
            if held.remove(&id).is_some() {
                ix.remove(id).unwrap();
                continue;
            }
            let values: Vec<u64> = (0..50).map(|j| mix64(step * 64 + j) % 100_000).collect();
            let mut f = StandardBloom::new(shape).unwrap();
            values.iter().for_each(|&v| f.insert(value(v)));
            ix.insert(id, Arc::new(f)).unwrap();
            held.insert(id, values);
        }
        for (id, values) in &held {
            for &v in values {
                for method in Method::ALL {
                    let found = ix.search(method, value(v), &mut ProbeStats::default());
                    assert!(
                        found.binary_search(id).is_ok(),
                        "order {order} {method:?}: leaf {id} value {v}"
                    );
                }
            }
        }
    }
}
