//! The policy on its own: level shapes in, filter choices out.

use sift_filter::math::{
    FprCurve, binary_fuse_bits_per_key, blocked_bloom_fpr, monkey_bits_per_key, ribbon_fpr,
    split_block_bloom_fpr_at, xor_family_fpr,
};

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

fn spent(projected: &[u64], bits: &[f64]) -> f64 {
    projected
        .iter()
        .zip(bits)
        .map(|(&n, &b)| n as f64 * b)
        .sum()
}

/// The exact FPR of a filter of `kind` at `bits_per_key` on a level of
/// `entries`: blocked Bloom at its best probe count, Ribbon as planned
/// for the filter size the policy assumes.
fn true_fpr(kind: FilterKindChoice, entries: u64, bits_per_key: f64) -> f64 {
    match kind {
        FilterKindChoice::None => 1.0,
        FilterKindChoice::BlockedBloom => {
            let n = 1_000_000u64;
            let m = (n as f64 * bits_per_key).round() as u64;
            (1..=24)
                .map(|k| blocked_bloom_fpr(m, n, k, 512))
                .fold(1.0, f64::min)
        }
        FilterKindChoice::SplitBlockBloom => (1..=8)
            .map(|k| split_block_bloom_fpr_at(bits_per_key, k))
            .fold(1.0, f64::min),
        FilterKindChoice::Ribbon => ribbon_fpr(entries.min(1_000_000), bits_per_key),
        // The widest fingerprint the bits pay for, else Ribbon.
        FilterKindChoice::BinaryFuse => {
            let n = entries.min(1_000_000);
            [16, 8]
                .into_iter()
                .find(|&width| binary_fuse_bits_per_key(n, width) <= bits_per_key)
                .map_or_else(|| ribbon_fpr(n, bits_per_key), xor_family_fpr)
        }
    }
}

const BLOOM: FilterKindChoice = FilterKindChoice::BlockedBloom;
const RIBBON: FilterKindChoice = FilterKindChoice::Ribbon;
const NONE: FilterKindChoice = FilterKindChoice::None;
const SPLIT: FilterKindChoice = FilterKindChoice::SplitBlockBloom;

#[test]
fn split_block_bloom_replaces_blocked_bloom_down_to_its_level() {
    let policy = FilterPolicy {
        split_block_to_level: Some(0),
        ..FilterPolicy::default()
    };
    assert_eq!(
        kinds(&plan(&policy, &SHAPE)),
        [SPLIT, BLOOM, RIBBON, RIBBON]
    );
    // Ribbon levels keep Ribbon, however deep the split-block levels reach.
    let deep = FilterPolicy {
        split_block_to_level: Some(9),
        ..FilterPolicy::default()
    };
    assert_eq!(kinds(&plan(&deep, &SHAPE)), [SPLIT, SPLIT, RIBBON, RIBBON]);
    let uniform = plan(&FilterPolicy::split_block_bloom(10.0), &SHAPE);
    assert!(
        uniform
            .iter()
            .all(|c| c.kind == SPLIT && c.bits_per_key == 10.0),
        "{uniform:?}"
    );
}

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
fn monkey_spends_exactly_the_budget() {
    for shape in [&SHAPE[..], &[3_000, 40_000, 90_000], &[7, 1_000_000_000]] {
        for average in [2.0, 5.0, 10.0, 16.0] {
            for policy in [
                monkey(average),
                FilterPolicy {
                    ribbon_from_level: None,
                    ..monkey(average)
                },
                FilterPolicy {
                    fuse_from_level: Some(2),
                    ..monkey(average)
                },
                FilterPolicy {
                    split_block_to_level: Some(1),
                    ..monkey(average)
                },
            ] {
                let bits = bits(&plan(&policy, shape));
                let budget = average * shape.iter().sum::<u64>() as f64;
                let used = spent(shape, &bits);
                assert!(
                    (used / budget - 1.0).abs() < 1e-9,
                    "{shape:?} at {average}: {bits:?} spend {used}, not {budget}"
                );
            }
        }
    }
}

#[test]
fn deeper_larger_levels_get_fewer_bits() {
    for policy in [
        monkey(10.0),
        FilterPolicy {
            ribbon_from_level: None,
            ..monkey(10.0)
        },
        FilterPolicy {
            fuse_from_level: Some(1),
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
fn ribbon_levels_are_sized_on_ribbons_curve() {
    let policy = monkey(10.0);
    let choices = plan(&policy, &SHAPE);
    let ours = bits(&choices);
    // The previous allocation: every level on the Bloom curve.
    let levels: Vec<(u64, FprCurve)> = SHAPE.iter().map(|&n| (n, FprCurve::BLOOM)).collect();
    let total = 10.0 * SHAPE.iter().sum::<u64>() as f64;
    let on_bloom = monkey_bits_per_key(&levels, total, 32.0);
    // At the same budget the Ribbon levels take fewer bits between them:
    // the shallower one over a bit per key fewer, the deepest (which holds
    // most keys, so most of the budget) about the same.
    let ribbon_memory = |b: &[f64]| spent(&SHAPE[2..], &b[2..]);
    assert!(
        ribbon_memory(&ours) < ribbon_memory(&on_bloom),
        "{ours:?} vs {on_bloom:?}"
    );
    assert!(ours[2] < on_bloom[2] - 1.0, "{ours:?} vs {on_bloom:?}");
    assert!(
        (ours[3] - on_bloom[3]).abs() < 0.1,
        "{ours:?} vs {on_bloom:?}"
    );
    // ...which buys the blocked Bloom levels above them more.
    assert!(ours[0] > on_bloom[0] && ours[1] > on_bloom[1]);
    // Measured with the exact curves of the filters built, fewer reads
    // are wasted.
    let summed = |b: &[f64]| -> f64 {
        choices
            .iter()
            .zip(SHAPE)
            .zip(b)
            .map(|((c, n), &b)| true_fpr(c.kind, n, b))
            .sum()
    };
    let (ours, theirs) = (summed(&ours), summed(&on_bloom));
    assert!(ours < 0.95 * theirs, "{ours} vs {theirs}");
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
fn monkey_caps_small_levels_at_32_bits_and_spends_the_rest() {
    let shape = [1_000, 1_000_000, 10_000_000];
    let policy = monkey(16.0);
    let capped = bits(&plan(&policy, &shape));
    assert_eq!(capped[0], MAX_MONKEY_BITS_PER_KEY, "{capped:?}");
    // Uncapped, L0 would have had more.
    let levels: Vec<(u64, FprCurve)> = shape
        .iter()
        .enumerate()
        .map(|(at, &n)| (n, policy.curve(at, n)))
        .collect();
    let total = 16.0 * shape.iter().sum::<u64>() as f64;
    let free = monkey_bits_per_key(&levels, total, f64::INFINITY);
    assert!(free[0] > 34.0, "{free:?}");
    assert!((spent(&shape, &capped) / total - 1.0).abs() < 1e-9);
    // The most a policy may ask for, 64 bits/key on average, gives every
    // level the cap.
    let all = bits(&plan(&monkey(64.0), &shape));
    assert_eq!(all, [MAX_MONKEY_BITS_PER_KEY; 3]);
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

#[test]
fn range_filters_get_their_own_monkey_budget_and_leave_the_key_filters_alone() {
    let shape = [10_000, 100_000, 1_000_000];
    let with = FilterPolicy::default();
    let without = FilterPolicy {
        range_filter: None,
        ..FilterPolicy::default()
    };
    let bits: Vec<f64> = (0..3)
        .map(|level| with.choose_scan(level, &shape).range_bits_per_key)
        .collect();
    assert!(
        bits.is_sorted_by(|a, b| a > b),
        "deeper levels get fewer bits: {bits:?}"
    );
    let spent: f64 = bits.iter().zip(shape).map(|(b, n)| b * n as f64).sum();
    let budget = 12.0 * shape.iter().sum::<u64>() as f64;
    assert!(
        (spent - budget).abs() < 1e-6 * budget,
        "{spent} of {budget}"
    );
    // Neighbours 10x apart are ln(10) / ln(2) = 3.32 bits/key apart.
    assert!((bits[0] - bits[1] - 10f64.log2()).abs() < 1e-9, "{bits:?}");
    for level in 0..3 {
        assert_eq!(with.choose(level, &shape), without.choose(level, &shape));
        assert_eq!(without.choose_scan(level, &shape), ScanFilterChoice::NONE);
    }
}

#[test]
fn prefix_filters_take_the_key_filters_bits_even_without_key_filters() {
    let shape = [10_000, 100_000];
    let policy = FilterPolicy {
        prefix_extractor: Some(PrefixExtractor::Fixed(4)),
        whole_key_filtering: false,
        ..FilterPolicy::default()
    };
    let keyed = FilterPolicy::default();
    for level in 0..2 {
        assert_eq!(policy.choose(level, &shape), FilterChoice::NONE);
        let (extractor, bits) = policy.choose_scan(level, &shape).prefix.unwrap();
        assert_eq!(extractor, PrefixExtractor::Fixed(4));
        assert_eq!(bits, keyed.choose(level, &shape).bits_per_key);
    }
    let zero = FilterPolicy {
        prefix_extractor: Some(PrefixExtractor::Fixed(0)),
        ..FilterPolicy::default()
    };
    assert!(matches!(zero.validate(), Err(Error::InvalidArgument(_))));
}

#[test]
fn access_counts_shift_bits_toward_hot_keys_within_the_level_memory() {
    let policy = monkey(10.0);
    let (level, n) = (1, SHAPE[1]);
    let decay = FprCurve::BLOCKED_BLOOM.decay;
    // Uniform lookups shift nothing; twice the level's density gains ln 2 / c.
    assert_eq!(policy.access_shift(level, n, 3.0, 3.0), 0.0);
    let doubled = policy.access_shift(level, n, 6.0, 3.0);
    assert!((doubled - std::f64::consts::LN_2 / decay).abs() < 1e-9);
    // Unused keys lose at most MAX_ACCESS_LOSS; very hot ones gain at most
    // MAX_ACCESS_GAIN.
    assert_eq!(policy.access_shift(level, n, 0.0, 3.0), -MAX_ACCESS_LOSS);
    assert_eq!(policy.access_shift(level, n, 3e6, 3.0), MAX_ACCESS_GAIN);
    // No counts, or fixed bits per level: nothing to steer by.
    assert_eq!(policy.access_shift(level, n, 1.0, 0.0), 0.0);
    let fixed = FilterPolicy::blocked_bloom(10.0);
    assert_eq!(fixed.access_shift(level, n, 6.0, 3.0), 0.0);
    // Keys weighted, the shifts of a level's tables never add memory (the
    // reference is the mean density): tables of 1, 2 and 7 units of keys.
    let tables = [(1.0, 50.0), (2.0, 4.0), (7.0, 0.5)];
    let keys: f64 = tables.iter().map(|t| t.0).sum();
    let mean = tables.iter().map(|t| t.0 * t.1).sum::<f64>() / keys;
    let spent: f64 = tables
        .iter()
        .map(|&(k, d)| k * policy.access_shift(level, n, d, mean))
        .sum();
    assert!(spent <= 0.0, "{spent}");
}

#[test]
fn a_shifted_choice_stays_within_one_bit_and_the_cap() {
    let choice = FilterChoice {
        kind: FilterKindChoice::BlockedBloom,
        bits_per_key: 10.0,
    };
    assert_eq!(choice.shifted(1.5).bits_per_key, 11.5);
    assert_eq!(choice.shifted(-20.0).bits_per_key, 1.0);
    assert_eq!(choice.shifted(40.0).bits_per_key, MAX_MONKEY_BITS_PER_KEY);
    assert_eq!(FilterChoice::NONE.shifted(3.0), FilterChoice::NONE);
}

#[test]
fn fuse_levels_get_binary_fuse_sized_on_its_curve() {
    let policy = FilterPolicy {
        fuse_from_level: Some(1),
        ..monkey(10.0)
    };
    let kinds: Vec<FilterKindChoice> = plan(&policy, &SHAPE).iter().map(|c| c.kind).collect();
    assert_eq!(kinds[0], FilterKindChoice::BlockedBloom);
    assert!(
        kinds[1..]
            .iter()
            .all(|&k| k == FilterKindChoice::BinaryFuse),
        "{kinds:?}"
    );
    // Fuse overrides Ribbon where both would apply.
    let both = FilterPolicy {
        ribbon_from_level: Some(1),
        fuse_from_level: Some(2),
        ..monkey(10.0)
    };
    let kinds: Vec<FilterKindChoice> = plan(&both, &SHAPE).iter().map(|c| c.kind).collect();
    assert_eq!(kinds[1], FilterKindChoice::Ribbon);
    assert_eq!(kinds[2], FilterKindChoice::BinaryFuse);
    // Its curve falls faster than blocked Bloom's: Monkey moves bits off
    // the fuse levels onto the Bloom level, against an all-Bloom policy.
    let bloom = FilterPolicy {
        ribbon_from_level: None,
        ..monkey(10.0)
    };
    let (fuse_bits, bloom_bits) = (bits(&plan(&policy, &SHAPE)), bits(&plan(&bloom, &SHAPE)));
    assert!(fuse_bits[0] > bloom_bits[0], "{fuse_bits:?} {bloom_bits:?}");
    // The fixed policy: fuse everywhere.
    let fixed = FilterPolicy::binary_fuse(10.0);
    assert!(
        plan(&fixed, &SHAPE)
            .iter()
            .all(|c| c.kind == FilterKindChoice::BinaryFuse)
    );
}
