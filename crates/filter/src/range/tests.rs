//! White-box tests: the filter against a model built from the hash alone,
//! ranges across the wrap of the hash space, and ranges inside one block.

use super::*;
use crate::hash::mix64;

/// The answer the design gives, computed from every key's hash value
/// without the Elias–Fano sequence.
fn model(f: &RangeFilter, keys: &[u64], lo: u64, hi: u64) -> bool {
    if lo > hi || keys.is_empty() {
        return false;
    }
    let hash = f.hash;
    let (first, last) = (hash.block(lo), hash.block(hi));
    if last - first >= MAX_QUERY_BLOCKS {
        return true;
    }
    let hashes: Vec<u64> = keys.iter().map(|&x| hash.of(x)).collect();
    (first..=last).any(|block| {
        let start = block << hash.block_shift();
        let (a, b) = (lo.max(start), hi.min(start | (hash.block_len() - 1)));
        let (ha, hb) = (hash.of(a), hash.of(b));
        hashes.iter().any(|&h| {
            if ha <= hb {
                (ha..=hb).contains(&h)
            } else {
                h >= ha || h <= hb
            }
        })
    })
}

/// Ranges around `x`: every `[x - i, x + j]` for small `i`, `j`, and a few
/// long ones; saturating at both ends of `u64`.
fn ranges_around(x: u64, block: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for i in 0..4 {
        for j in 0..4 {
            out.push((x.saturating_sub(i), x.saturating_add(j)));
        }
    }
    for len in [block / 2, block, 2 * block, 4 * block, u64::MAX] {
        out.push((x.saturating_sub(len), x));
        out.push((x, x.saturating_add(len)));
    }
    out
}

#[test]
fn answers_as_the_model_and_never_misses_a_key() {
    for case in 0..60u64 {
        let n = (mix64(case) % 40) as usize;
        let bits_per_key = 2.0 + (mix64(case + 100) % 100) as f64 / 10.0;
        // Keys: clustered near a random base, near both ends, at powers of two.
        let base = mix64(case + 200);
        let keys: Vec<u64> = (0..n as u64)
            .map(|i| match mix64(case ^ (i << 8)) % 4 {
                0 => base.wrapping_add(mix64(i + case) % 5_000),
                1 => mix64(i + case) % 300,
                2 => u64::MAX - mix64(i + case) % 300,
                _ => (1u64 << (mix64(i + case) % 64))
                    .wrapping_add(mix64(i) % 7)
                    .wrapping_sub(3),
            })
            .collect();
        let f = RangeFilter::build(keys.iter().copied(), bits_per_key).unwrap();
        let block = f.block_len();
        let mut queries: Vec<(u64, u64)> =
            keys.iter().flat_map(|&x| ranges_around(x, block)).collect();
        queries.extend(ranges_around(base ^ 0x5555, block));
        queries.extend((0..200).map(|i| {
            let lo = base.wrapping_add(mix64(i) % 6_000);
            (lo, lo.saturating_add(mix64(i + 1) % 64))
        }));
        queries.extend([(0, 0), (u64::MAX, u64::MAX), (0, u64::MAX), (5, 4)]);
        for (lo, hi) in queries {
            let got = f.may_contain_range(lo, hi);
            assert_eq!(got, model(&f, &keys, lo, hi), "case {case}: [{lo}, {hi}]");
            if keys.iter().any(|k| (lo..=hi).contains(k)) {
                assert!(got, "case {case}: false negative on [{lo}, {hi}]");
            }
        }
    }
}

#[test]
fn ranges_across_the_wrap_of_the_hash_space() {
    // 3 keys at 10 bits/key: r = 768, L = 512. A block that starts above
    // 256 wraps past r - 1 inside; put keys just before, at and after it.
    let probe = RangeFilter::build([1, 2, 3], 10.0).unwrap();
    assert_eq!((probe.hash_space(), probe.block_len()), (768, 512));
    let hash = probe.hash;
    let mut wrapped_blocks = 0;
    for block in 0..64u64 {
        let start = hash.block_start(block);
        if start + 512 <= 768 {
            continue;
        }
        wrapped_blocks += 1;
        // Offset `768 - start` of the block hashes to 0.
        let at_zero = block * 512 + (768 - start);
        let keys = [at_zero - 1, at_zero, at_zero + 1];
        let f = RangeFilter::build(keys, 10.0).unwrap();
        assert_eq!(hash.of(at_zero), 0);
        assert_eq!(hash.of(at_zero - 1), 767);
        for lo in at_zero - 5..=at_zero + 5 {
            for hi in lo..=at_zero + 5 {
                let holds = keys.iter().any(|k| (lo..=hi).contains(k));
                assert_eq!(f.may_contain_range(lo, hi), model(&f, &keys, lo, hi));
                if holds {
                    assert!(f.may_contain_range(lo, hi), "[{lo}, {hi}]");
                }
            }
        }
        // Within one block the keys' own neighbours are never false positives.
        assert!(!f.may_contain_range(at_zero - 5, at_zero - 2));
        assert!(!f.may_contain_range(at_zero + 2, at_zero + 5));
    }
    assert!(wrapped_blocks > 10, "{wrapped_blocks}");
}

#[test]
fn gaps_inside_one_block_are_never_false_positives() {
    // 100,000 even keys below 200,000 at 10 bits/key: r = 25.6M, L = 2^24,
    // all in block 0, where h is one-to-one. Every odd key is a miss.
    let f = RangeFilter::build((0..100_000u64).map(|i| 2 * i), 10.0).unwrap();
    assert_eq!(f.block_len(), 1 << 24);
    assert!((0..100_000u64).all(|i| f.may_contain(2 * i)));
    assert!((0..100_000u64).all(|i| !f.may_contain(2 * i + 1)));
}

#[test]
fn empty_and_single_value_filters() {
    let empty = RangeFilter::build([], 10.0).unwrap();
    assert_eq!(
        (empty.num_keys(), empty.hash_space(), empty.block_len()),
        (0, 1, 1)
    );
    assert!(!empty.may_contain_range(0, u64::MAX));
    assert!(!empty.may_contain(0));
    assert_eq!(empty.expected_fpr(1_000), 0.0);
    assert!(empty.bits_per_key().is_infinite());
    // One key at 2 bits/key: r = L = 1, every value hashes to 0.
    let one = RangeFilter::build([7, 7, 7], 2.0).unwrap();
    assert_eq!((one.num_keys(), one.hash_space()), (1, 1));
    assert!(one.may_contain(7) && one.may_contain(u64::MAX) && one.may_contain(0));
    assert_eq!(one.expected_fpr(1), 1.0);
}
