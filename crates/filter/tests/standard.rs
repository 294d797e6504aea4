//! Standard Bloom: no false negatives, FPR against the formula, encoding.
mod common;

use common::*;
use proptest::prelude::*;
use sift_filter::{BloomShape, DecodeError, Filter, StandardBloom, math};

#[expect(
    clippy::unwrap_used,
    reason = "test helper; every shape passed in is valid"
)]
fn filled(shape: BloomShape, members: &[sift_filter::KeyHash]) -> StandardBloom {
    let mut f = StandardBloom::new(shape).unwrap();
    members.iter().for_each(|&h| f.insert(h));
    f
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn no_false_negatives(n in 0usize..5_000, bits_per_key in 1.0f64..24.0, seed: u64) {
        let members = hashes(seed, n);
        let f = filled(BloomShape::for_bits_per_key(n as u64, bits_per_key), &members);
        for &h in &members {
            prop_assert!(f.may_contain(h));
        }
    }

    #[test]
    fn damaged_encodings_error_or_decode_but_never_panic(n in 0usize..300, seed: u64) {
        let f = filled(BloomShape::for_fpr(n as u64, 0.01), &hashes(seed, n));
        for bytes in damaged_variants(&f.encode(), 64) {
            // Any byte flip is caught by the checksum; truncations by lengths.
            prop_assert!(StandardBloom::decode(&bytes).is_err());
        }
    }

    #[test]
    fn random_bytes_never_decode(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        prop_assert!(StandardBloom::decode(&bytes).is_err());
    }
}

/// Measured FPR against `(1 - e^{-kn/m})^k` for many sizes. The formula is
/// an approximation for small `m` (it treats bits as independent); its
/// relative error is below 1% once `m ≥ 1,000` (Bose et al. 2008 bound the
/// gap by O(k·√(ln m / m))), so 3% model error is allowed on top of the
/// binomial tolerance.
#[test]
fn fpr_matches_formula_across_sizes() {
    let probes = hashes(0xfeed, 400_000);
    for (i, &(n, bits_per_key)) in [
        (1_000u64, 10.0),
        (10_000, 10.0),
        (50_000, 6.0),
        (100_000, 14.0),
        (200_000, 8.0),
    ]
    .iter()
    .enumerate()
    {
        let shape = BloomShape::for_bits_per_key(n, bits_per_key);
        let f = filled(shape, &hashes(i as u64, n as usize));
        let hits = count_hits(&probes, |h| f.may_contain(h));
        let expected = math::bloom_fpr(shape.bits, n, shape.probes);
        assert_rate_near(
            &format!("n={n} bpk={bits_per_key}"),
            hits,
            probes.len() as u64,
            expected,
            0.03,
        );
        // Conditional on this filter's fill, probes land independently: fill^k.
        assert_rate_near("fill^k", hits, probes.len() as u64, f.estimated_fpr(), 0.01);
    }
}

#[test]
fn count_estimate_tracks_distinct_inserts() {
    let members = hashes(3, 20_000);
    let mut f = StandardBloom::new(BloomShape::for_fpr(20_000, 0.01)).unwrap();
    for &h in members.iter().chain(&members) {
        f.insert(h); // duplicates set no new bits
    }
    let est = f.estimated_count().unwrap();
    assert!((est - 20_000.0).abs() / 20_000.0 < 0.02, "{est}");
}

/// Golden encoding: pins the envelope, the body layout, the probe sequence
/// and the hash. If this changes, filters on disk are misread.
#[test]
fn golden_encoding() {
    let mut f = StandardBloom::new(BloomShape {
        bits: 64,
        probes: 3,
    })
    .unwrap();
    f.insert(sift_filter::KeyHash::of(b"sift"));
    let hex: String = f.encode().iter().map(|b| format!("{b:02x}")).collect();
    // "SFLT", v1, kind 1, hash 1, flags 0, body 20 bytes: k = 3, m = 64,
    // one word with bits 34, 60, 23 = top 6 bits of g_0, g_1, g_2 for
    // xxh3_128("sift") (checked by hand), then the xxh3_64 checksum.
    assert_eq!(
        hex,
        "53464c5401010100140000000300000040000000000000000000800004000010\
         9c66e0171f0e8443"
    );
}

#[test]
fn decode_reports_the_right_error() {
    let f = StandardBloom::new(BloomShape {
        bits: 100,
        probes: 7,
    })
    .unwrap();
    let bytes = f.encode();
    assert_eq!(StandardBloom::decode(&bytes).unwrap(), f);
    assert!(matches!(
        StandardBloom::decode(&bytes[..5]),
        Err(DecodeError::Truncated { .. })
    ));
    let mut wrong = bytes.clone();
    wrong[5] = 2;
    assert!(matches!(
        StandardBloom::decode(&wrong),
        Err(DecodeError::WrongKind { .. })
    ));
}
