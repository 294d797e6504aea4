//! Split-block Bloom: no false negatives, FPR against the filter's own
//! estimate and against the formula, SIMD and scalar answers agree, the
//! probe count is the formula's minimiser, encoding and decoding.
mod common;

use common::*;
use proptest::prelude::*;
use sift_filter::codec::{self, FilterKind, Writer};
use sift_filter::{
    AnyFilter, DecodeError, Error, Filter, FilterBuilder, KeyHash, SplitBlockBloom,
    SplitBlockBloomBuilder, math,
};

/// A sealed encoding with any body fields, valid or not. Lanes are packed
/// two to a word, as the encoder writes them.
fn forged(probes: u32, blocks: u64, words: &[u64]) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(probes).u64(blocks).words(words);
    codec::seal(FilterKind::SplitBlockBloom, w)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn no_false_negatives(n in 0usize..5_000, bits_per_key in 0.5f64..40.0, seed: u64) {
        let members = hashes(seed, n);
        let f = SplitBlockBloom::from_hashes(&members, bits_per_key).unwrap();
        for &h in &members {
            prop_assert!(f.may_contain(h) && f.may_contain_scalar(h));
        }
        let mut builder = SplitBlockBloomBuilder::new(bits_per_key).unwrap();
        members.iter().for_each(|&h| builder.add(h));
        prop_assert_eq!(builder.finish(), f);
    }

    /// Every probe count, and blocks from empty to full, so that both
    /// answers occur at every probe count.
    #[test]
    fn simd_and_scalar_agree_on_arbitrary_blocks(
        probes in 1u32..=8,
        words in proptest::collection::vec((any::<u64>(), any::<u64>(), 0u8..4), 4..=64),
        seed: u64,
    ) {
        let blocks = words.len() / 4;
        // AND of 0..3 random words: a lane about 100%, 50%, 25% or 12.5% full.
        let words: Vec<u64> = words[..blocks * 4]
            .iter()
            .map(|&(a, b, density)| match density {
                0 => u64::MAX,
                1 => a,
                2 => a & b,
                _ => a & b & a.rotate_left(17),
            })
            .collect();
        let f = SplitBlockBloom::decode(&forged(probes, blocks as u64, &words)).unwrap();
        prop_assert_eq!(f.num_probes(), probes);
        for h in hashes(seed, 2_000) {
            prop_assert_eq!(f.may_contain(h), f.may_contain_scalar(h));
        }
    }

    #[test]
    fn damaged_encodings_never_decode(n in 0usize..300, bits_per_key in 1.0f64..20.0, seed: u64) {
        let f = SplitBlockBloom::from_hashes(&hashes(seed, n), bits_per_key).unwrap();
        for bytes in damaged_variants(&f.encode(), 64) {
            prop_assert!(SplitBlockBloom::decode(&bytes).is_err());
        }
    }

    #[test]
    fn random_bytes_never_decode(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        prop_assert!(SplitBlockBloom::decode(&bytes).is_err());
    }

    /// Bodies with a valid checksum but arbitrary fields: an error, or a
    /// filter that answers (identically on both paths) without panicking
    /// and re-encodes to the same bytes.
    #[test]
    fn forged_bodies_error_or_answer(
        probes in prop_oneof![3 => 0u32..=10, 1 => any::<u32>()],
        blocks in prop_oneof![3 => 0u64..=4, 1 => any::<u64>()],
        extra_words in prop_oneof![3 => Just(0i64), 1 => -5i64..=5],
        seed: u64,
    ) {
        let len = if blocks <= 4 { 4 * blocks as i64 + extra_words } else { extra_words.abs() };
        let words: Vec<u64> = hashes(seed, len.max(0) as usize).iter().map(|h| h.lo()).collect();
        let bytes = forged(probes, blocks, &words);
        if let Ok(f) = SplitBlockBloom::decode(&bytes) {
            prop_assert!((1..=SplitBlockBloom::MAX_PROBES).contains(&probes));
            prop_assert_eq!(f.num_blocks() as u64 * 4, words.len() as u64);
            for h in hashes(seed ^ 1, 100) {
                prop_assert_eq!(f.may_contain(h), f.may_contain_scalar(h));
            }
            prop_assert!(f.estimated_fpr() <= 1.0 && f.fill_ratio() <= 1.0);
            prop_assert_eq!(f.encode(), bytes);
        }
    }
}

/// Measured FPR against the filter's own `estimated_fpr`, which is exact
/// for the filter's contents (every lane's bit is uniform and independent
/// of the others): only the binomial noise of the 1M probes remains, and
/// no model error is allowed.
#[test]
fn fpr_matches_own_estimate() {
    let probes = hashes(0xbeef, 1_000_000);
    for (i, &(n, bits_per_key)) in [
        (10u64, 10.0),
        (1_000, 10.0),
        (20_000, 4.0),
        (100_000, 10.0),
        (100_000, 14.0),
        (300_000, 7.0),
        (300_000, 20.0),
    ]
    .iter()
    .enumerate()
    {
        let f = SplitBlockBloom::from_hashes(&hashes(100 + i as u64, n as usize), bits_per_key)
            .unwrap();
        let hits = count_hits(&probes, |h| f.may_contain(h));
        let what = format!("n={n} bpk={bits_per_key} k={}", f.num_probes());
        assert_rate_near(&what, hits, probes.len() as u64, f.estimated_fpr(), 0.0);
    }
}

/// The formula is the expectation of a filter's FPR over random key sets.
/// Each filter's exact FPR (its own estimate) is one draw; over 8 filters
/// the mean must lie within `Z` standard errors (from the draws' own
/// spread) of the formula.
#[test]
fn formula_is_the_mean_of_the_filters_fprs() {
    for &(n, bits_per_key) in &[
        (100_000u64, 10.0),
        (100_000, 5.0),
        (50_000, 12.0),
        (50_000, 16.0),
    ] {
        let fprs: Vec<f64> = (0..8)
            .map(|seed| {
                SplitBlockBloom::from_hashes(&hashes(1_000 + seed, n as usize), bits_per_key)
                    .unwrap()
                    .estimated_fpr()
            })
            .collect();
        let f = SplitBlockBloom::with_capacity(n, bits_per_key).unwrap();
        let formula = math::split_block_bloom_fpr(f.num_blocks() as u64 * 256, n, f.num_probes());
        let mean = fprs.iter().sum::<f64>() / 8.0;
        let variance = fprs.iter().map(|p| (p - mean).powi(2)).sum::<f64>() / 7.0;
        let standard_error = (variance / 8.0).sqrt();
        assert!(
            (mean - formula).abs() <= Z * standard_error,
            "n={n} bpk={bits_per_key}: filters {mean:.6} ± {standard_error:.6}, formula {formula:.6}"
        );
    }
}

#[test]
fn probe_count_is_the_formula_minimiser() {
    for (n, bits_per_key) in [
        (1_000_000u64, 10.0),
        (100_000, 4.0),
        (100_000, 12.0),
        (1_000, 16.0),
    ] {
        let f = SplitBlockBloom::with_capacity(n, bits_per_key).unwrap();
        let m = f.num_blocks() as u64 * 256;
        let best = (1..=8)
            .min_by(|&a, &b| {
                math::split_block_bloom_fpr(m, n, a)
                    .total_cmp(&math::split_block_bloom_fpr(m, n, b))
            })
            .unwrap();
        assert_eq!(f.num_probes(), best, "n={n} bpk={bits_per_key}");
    }
}

#[test]
fn count_estimate_tracks_distinct_inserts() {
    let members = hashes(3, 50_000);
    let mut f = SplitBlockBloom::with_capacity(50_000, 10.0).unwrap();
    for &h in members.iter().chain(&members) {
        f.insert(h); // duplicates set no new bits
    }
    let est = f.estimated_count().unwrap();
    assert!((est - 50_000.0).abs() / 50_000.0 < 0.01, "{est}");
}

/// Golden encoding: pins the envelope, the body layout, the window and the
/// bits taken from the hash. If this changes, filters on disk are misread.
#[test]
fn golden_encoding() {
    // 25 keys at 10.24 bits/key: one block, m/n = 10.24, so 6 probes.
    let mut f = SplitBlockBloom::with_capacity(25, 10.24).unwrap();
    assert_eq!((f.num_blocks(), f.num_probes()), (1, 6));
    f.insert(KeyHash::of(b"sift"));
    f.insert(KeyHash::of(b"value"));
    let hex: String = f.encode().iter().map(|b| format!("{b:02x}")).collect();
    // "SFLT", v1, kind 12, hash 1, flags 0, body 44 bytes: k = 6, 1 block,
    // then 8 lanes. xxh3_128("sift").hi = 0x699c1db3_01cbad78: window
    // from lane 0 (low 3 bits 0), bits 15, 21, 25, 0, 22, 3 in lanes 0..6
    // (the top 5 bits of its bytes). xxh3_128("value").hi =
    // 0xd7ab8cce_59abd505: window from lane 5, lanes 5, 6, 7, 0, 1, 2 get
    // bits 17, 21, 26, 0, 26, 21. Checksum recomputed with python-xxhash.
    let expected = "53464c54010c01002c000000".to_owned() // header
        + "06000000" // k = 6
        + "0100000000000000" // 1 block
        + "01800000" // lane 0: bits 0, 15
        + "00002004" // lane 1: bits 21, 26
        + "00002002" // lane 2: bits 21, 25
        + "01000000" // lane 3: bit 0
        + "00004000" // lane 4: bit 22
        + "08000200" // lane 5: bits 3, 17
        + "00002000" // lane 6: bit 21
        + "00000004" // lane 7: bit 26
        + "3ce191962c89e443"; // checksum
    assert_eq!(hex, expected);
    assert_eq!(SplitBlockBloom::decode(&f.encode()).unwrap(), f);
    assert_eq!(f.fill_ratio(), 12.0 / 256.0);
}

#[test]
fn decodes_filters_built_with_other_settings() {
    for (bits_per_key, probes) in [(40.0, 8), (3.0, 2), (0.5, 1)] {
        let members = hashes(7, 1_000);
        let f = SplitBlockBloom::from_hashes(&members, bits_per_key).unwrap();
        assert_eq!(f.num_probes(), probes, "{bits_per_key}");
        let back = SplitBlockBloom::decode(&f.encode()).unwrap();
        assert_eq!(back, f);
        assert!(members.iter().all(|&h| back.may_contain(h)));
        let any = AnyFilter::decode(&f.encode()).unwrap();
        assert_eq!(any.kind(), FilterKind::SplitBlockBloom);
    }
}

#[test]
fn invalid_bits_per_key_is_an_error() {
    let some = hashes(1, 10);
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let invalid = |r: Result<(), Error>| matches!(r, Err(Error::InvalidParameter(_)));
        assert!(
            invalid(SplitBlockBloom::from_hashes(&some, bad).map(drop)),
            "{bad}"
        );
        assert!(
            invalid(SplitBlockBloom::with_capacity(10, bad).map(drop)),
            "{bad}"
        );
        assert!(invalid(SplitBlockBloomBuilder::new(bad).map(drop)), "{bad}");
    }
    assert!(matches!(
        SplitBlockBloom::with_capacity(u64::MAX, 10.0),
        Err(Error::InvalidParameter(_))
    ));
    assert_eq!(
        SplitBlockBloom::from_hashes(&some, 1e-300)
            .unwrap()
            .num_blocks(),
        1
    );
}

#[test]
fn decode_reports_the_right_error() {
    let f = SplitBlockBloom::from_hashes(&hashes(1, 100), 10.0).unwrap();
    let bytes = f.encode();
    assert!(matches!(
        SplitBlockBloom::decode(&bytes[..5]),
        Err(DecodeError::Truncated { .. })
    ));
    let mut wrong = bytes.clone();
    wrong[5] = 2;
    assert!(matches!(
        SplitBlockBloom::decode(&wrong),
        Err(DecodeError::WrongKind { .. })
    ));
    let block = [u64::MAX; 4];
    let invalid = |bytes: Vec<u8>| match SplitBlockBloom::decode(&bytes) {
        Err(DecodeError::Invalid(why)) => why,
        other => panic!("expected Invalid, got {other:?}"),
    };
    assert_eq!(invalid(forged(0, 1, &block)), "probe count out of range");
    assert_eq!(invalid(forged(9, 1, &block)), "probe count out of range");
    assert_eq!(invalid(forged(6, 0, &[])), "zero blocks");
    assert_eq!(
        invalid(forged(6, u64::MAX, &block)),
        "block count too large"
    );
    assert_eq!(
        invalid(forged(6, 2, &block)),
        "block count disagrees with payload length"
    );
}
