//! The policy on its own: level shapes in, filter choices out.

use super::*;

/// Four levels, size ratio 10: what a leveled tree of 111 million entries
/// looks like, L0 at a tenth of L1.
const SHAPE: [u64; 4] = [100_000, 1_000_000, 10_000_000, 100_000_000];

fn monkey(average: f64) -> FilterPolicy {
    FilterPolicy {
        bits_per_key: BitsPerKey::Monkey { average },
        ..FilterPolicy::default()
    }
}

/// The choice for every level of `projected`.
fn plan(policy: &FilterPolicy, projected: &[u64]) -> Vec<FilterChoice> {
    (0..projected.len())
        .map(|level| policy.choose(level, projected))
        .collect()
}

fn bits(choices: &[FilterChoice]) -> Vec<f64> {
    choices.iter().map(|c| c.bits_per_key).collect()
}

fn kinds(choices: &[FilterChoice]) -> Vec<FilterKindChoice> {
    choices.iter().map(|c| c.kind).collect()
}

const BLOOM: FilterKindChoice = FilterKindChoice::BlockedBloom;
const RIBBON: FilterKindChoice = FilterKindChoice::Ribbon;
const NONE: FilterKindChoice = FilterKindChoice::None;

#[test]
fn per_level_bits_are_fixed_and_the_last_value_repeats() {
    let policy = FilterPolicy {
        bits_per_key: BitsPerKey::PerLevel(PerLevel::new(vec![12.0, 10.0]).unwrap()),
        ..FilterPolicy::default()
    };
    let choices = plan(&policy, &SHAPE);
    assert_eq!(bits(&choices), [12.0, 10.0, 10.0, 10.0]);
    assert_eq!(kinds(&choices), [BLOOM, BLOOM, RIBBON, RIBBON]);
    // The level sizes do not matter.
    assert_eq!(plan(&policy, &[5, 5, 5, 5]), choices);
    // The comparisons' policy: blocked Bloom everywhere.
    let uniform = plan(&FilterPolicy::blocked_bloom(10.0), &SHAPE);
    assert!(
        uniform
            .iter()
            .all(|c| c.kind == BLOOM && c.bits_per_key == 10.0),
        "{uniform:?}"
    );
}

#[test]
fn deeper_larger_levels_get_fewer_bits() {
    for policy in [
        monkey(10.0),
        FilterPolicy {
            ribbon_from_level: None,
            ..monkey(10.0)
        },
    ] {
        let choices = plan(&policy, &SHAPE);
        for pair in choices.windows(2) {
            assert!(
                pair[0].bits_per_key > pair[1].bits_per_key + 1.0,
                "{choices:?}"
            );
        }
    }
    // The default: blocked Bloom on L0 and L1, Ribbon below.
    assert_eq!(
        kinds(&plan(&monkey(10.0), &SHAPE)),
        [BLOOM, BLOOM, RIBBON, RIBBON]
    );
}

#[test]
fn optimize_filters_for_hits_drops_only_the_deepest_level() {
    for base in [monkey(10.0), FilterPolicy::blocked_bloom(10.0)] {
        let hits = FilterPolicy {
            optimize_filters_for_hits: true,
            ..base.clone()
        };
        let (with, without) = (plan(&hits, &SHAPE), plan(&base, &SHAPE));
        assert_eq!(with[..3], without[..3]);
        assert_eq!(with[3], FilterChoice::NONE);
        assert!(without[3].enabled());
        // The deepest level holding entries, not the last slot.
        let shape = [100, 1_000, 0];
        assert_eq!(hits.choose(1, &shape), FilterChoice::NONE);
        assert_eq!(hits.choose(0, &shape), base.choose(0, &shape));
        // Level 0 alone keeps its filter: it is where every flush lands.
        assert_eq!(hits.choose(0, &[1_000]), base.choose(0, &[1_000]));
        assert!(hits.choose(0, &[1_000]).enabled());
    }
}

#[test]
fn empty_levels_get_no_filter_and_no_budget() {
    let policy = FilterPolicy {
        ribbon_from_level: None,
        ..monkey(10.0)
    };
    let gapped = [100_000, 0, 10_000_000];
    assert_eq!(policy.choose(1, &gapped), FilterChoice::NONE);
    // The others split the budget as if the empty level were not there.
    let closed = [100_000, 10_000_000];
    assert_eq!(policy.choose(0, &gapped), policy.choose(0, &closed));
    assert_eq!(policy.choose(2, &gapped), policy.choose(1, &closed));
    // A level past the projection, or a projection of nothing.
    assert_eq!(policy.choose(5, &gapped), FilterChoice::NONE);
    assert_eq!(policy.choose(0, &[0]), FilterChoice::NONE);
    assert_eq!(policy.choose(0, &[]), FilterChoice::NONE);
}

#[test]
fn zero_budget_means_no_filters() {
    let none = [FilterChoice::NONE; 4];
    assert_eq!(plan(&monkey(0.0), &SHAPE), none);
    assert_eq!(plan(&FilterPolicy::blocked_bloom(0.0), &SHAPE), none);
    let policy = FilterPolicy {
        bits_per_key: BitsPerKey::PerLevel(PerLevel::new(vec![10.0, 0.0]).unwrap()),
        ..FilterPolicy::default()
    };
    assert_eq!(kinds(&plan(&policy, &SHAPE)), [BLOOM, NONE, NONE, NONE]);
}

#[test]
fn validation_refuses_bits_out_of_range() {
    assert!(FilterPolicy::default().validate().is_ok());
    assert!(FilterPolicy::blocked_bloom(64.0).validate().is_ok());
    assert!(monkey(0.0).validate().is_ok());
    for bad in [f64::NAN, f64::INFINITY, -1.0, 64.5] {
        for policy in [FilterPolicy::blocked_bloom(bad), monkey(bad)] {
            assert!(
                matches!(policy.validate(), Err(Error::InvalidArgument(_))),
                "{policy:?}"
            );
        }
    }
    let policy = FilterPolicy {
        partition_keys: 0,
        ..FilterPolicy::default()
    };
    assert!(matches!(policy.validate(), Err(Error::InvalidArgument(_))));
}
