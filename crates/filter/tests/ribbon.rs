//! Ribbon and its static-filter builder: no false negatives, FPR against the
//! `2^-r` mixture of the layout, bits/key achieved, the Bloom fallback,
//! encoding and decoding.
mod common;

use common::*;
use proptest::prelude::*;
use sift_filter::codec::{self, FilterKind, Writer};
use sift_filter::{
    BlockedBloom, DecodeError, Error, Filter, FilterBuilder, KeyHash, Ribbon, RibbonBuilder,
    StandardBloom, StaticFilter, mix64,
};

/// Builds from `members` with `builder`.
fn build(mut builder: RibbonBuilder, members: &[KeyHash]) -> StaticFilter {
    members.iter().for_each(|&h| builder.add(h));
    builder.finish()
}

/// The Ribbon inside, or a panic naming what was built instead.
#[expect(clippy::panic, reason = "test helper: a fallback here fails the test")]
fn ribbon(f: StaticFilter) -> Ribbon {
    match f {
        StaticFilter::Ribbon(r) => r,
        StaticFilter::Bloom(b) => panic!("fell back to Bloom ({} bytes)", b.size_bytes()),
        other => panic!("built {:?}", other.kind()),
    }
}

/// The body fields of a Ribbon encoding: seed, keys, slots, segments.
#[expect(
    clippy::unwrap_used,
    reason = "test helper; reads encodings the library made"
)]
fn fields(bytes: &[u8]) -> (u32, u64, u64, u64) {
    let mut r = codec::open(bytes, FilterKind::Ribbon).unwrap();
    (
        r.u32().unwrap(),
        r.u64().unwrap(),
        r.u64().unwrap(),
        r.u64().unwrap(),
    )
}

/// A sealed Ribbon encoding with any body fields, valid or not.
fn forged(seed: u32, keys: u64, slots: u64, segments: u64, words: &[u64]) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(seed).u64(keys).u64(slots).u64(segments).words(words);
    codec::seal(FilterKind::Ribbon, w)
}

/// The expected FPR of `slots` slots holding `segments` column segments,
/// computed here from the layout rule (not by the library): blocks of 128
/// slots; `u = ceil(segments / blocks)` columns in the last blocks, `u - 1`
/// in the first `u·blocks - segments`; a query checks the columns of its
/// start's block, starts being uniform over `slots - 127`.
fn mixture(slots: u64, segments: u64) -> f64 {
    let blocks = slots / 128;
    let upper = segments.div_ceil(blocks);
    let lower_blocks = upper * blocks - segments;
    let starts = (slots - 127) as f64;
    let lower_share = (lower_blocks * 128) as f64 / starts;
    let p = 0.5f64.powi(upper as i32);
    lower_share * 2.0 * p + (1.0 - lower_share) * p
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn no_false_negatives(n in 0usize..5_000, bits_per_key in 0.5f64..24.0, seed: u64) {
        let members = hashes(seed, n);
        let f = build(RibbonBuilder::new(bits_per_key).unwrap(), &members);
        for &h in &members {
            prop_assert!(f.may_contain(h));
        }
    }

    #[test]
    fn no_false_negatives_at_target_fpr(n in 0usize..5_000, log_fpr in -20.0f64..-0.1, seed: u64) {
        let members = hashes(seed, n);
        let f = build(RibbonBuilder::with_fpr(log_fpr.exp2()).unwrap(), &members);
        for &h in &members {
            prop_assert!(f.may_contain(h));
        }
    }

    /// Every key added several times, in any order: duplicates are
    /// redundant equations, never a banding failure, and are counted once.
    #[test]
    fn duplicates_are_harmless(n in 1usize..2_000, copies in 2usize..4, seed: u64) {
        let members = hashes(seed, n);
        let mut all: Vec<KeyHash> = (0..copies).flat_map(|_| members.iter().copied()).collect();
        let len = all.len();
        all.rotate_left(seed as usize % len);
        let f = build(RibbonBuilder::with_fpr(0.01).unwrap(), &all);
        for &h in &members {
            prop_assert!(f.may_contain(h));
        }
        if let StaticFilter::Ribbon(r) = &f {
            prop_assert_eq!(r.estimated_count(), Some(n as f64));
        }
    }

    #[test]
    fn damaged_encodings_never_decode(n in 0usize..400, log_fpr in -12.0f64..-1.0, seed: u64) {
        let f = build(RibbonBuilder::with_fpr(log_fpr.exp2()).unwrap(), &hashes(seed, n));
        for bytes in damaged_variants(&f.encode(), 64) {
            // Byte flips are caught by the checksum; cuts and growth by lengths.
            prop_assert!(Ribbon::decode(&bytes).is_err());
            prop_assert!(StaticFilter::decode(&bytes).is_err());
        }
    }

    #[test]
    fn random_bytes_never_decode(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        prop_assert!(Ribbon::decode(&bytes).is_err());
        prop_assert!(StaticFilter::decode(&bytes).is_err());
    }

    /// Bodies with a valid checksum but arbitrary fields: an error, or a
    /// filter that answers without panicking, reports sane statistics and
    /// re-encodes to the same bytes. About a third of the cases decode.
    #[test]
    fn forged_bodies_error_or_answer(
        seed in prop_oneof![3 => 0u32..20, 1 => any::<u32>()],
        keys in prop_oneof![3 => 0u64..600, 1 => any::<u64>()],
        slots in prop_oneof![3 => (0u64..=4).prop_map(|b| b * 128), 1 => any::<u64>()],
        columns in prop_oneof![3 => 0u64..=70, 1 => any::<u64>()],
        extra_words in prop_oneof![3 => Just(0i64), 1 => -3i64..=3],
        probe_seed: u64,
    ) {
        // Up to 4 blocks of up to 70 columns: some over the 64-column cap.
        let segments = if slots <= 512 { (slots / 128).saturating_mul(columns) } else { columns };
        let len = if segments <= 1_000 { 2 * segments as i64 + extra_words } else { extra_words.abs() };
        let words: Vec<u64> = hashes(probe_seed, len.max(0) as usize).iter().map(|h| h.lo()).collect();
        let bytes = forged(seed, keys, slots, segments, &words);
        if let Ok(f) = Ribbon::decode(&bytes) {
            prop_assert!(slots % 128 == 0 && keys <= slots && words.len() as u64 == 2 * segments);
            for h in hashes(probe_seed ^ 1, 200) {
                let _ = f.may_contain(h);
            }
            prop_assert!((0.0..=1.0).contains(&f.estimated_fpr()));
            prop_assert!((0.0..=1.0).contains(&f.fill_ratio()));
            prop_assert_eq!(f.encode(), bytes);
        }
    }
}

/// Measured FPR against the `2^-r` mixture across sizes and bits/key, 1M
/// non-member probes per filter. A non-member's result bits are uniform and
/// independent of its start and coefficients, so given the layout each
/// probe is a false positive with exactly the mixture's probability: no
/// model error beyond the binomial spread.
#[test]
fn fpr_matches_the_column_mixture() {
    let probes = hashes(0xfeed, 1_000_000);
    let trials = probes.len() as u64;
    let cases: [(usize, RibbonBuilder); 8] = [
        (1_000, RibbonBuilder::new(7.0).unwrap()),
        (20_000, RibbonBuilder::new(4.3).unwrap()),
        (100_000, RibbonBuilder::new(10.5).unwrap()),
        (300_000, RibbonBuilder::new(7.05).unwrap()),
        (50_000, RibbonBuilder::new(1.5).unwrap()),
        (200_000, RibbonBuilder::with_fpr(0.01).unwrap()),
        (30_000, RibbonBuilder::with_fpr(0.002).unwrap()),
        (5_000, RibbonBuilder::with_fpr(0.2).unwrap()),
    ];
    for (i, (n, builder)) in cases.into_iter().enumerate() {
        let f = ribbon(build(builder, &hashes(i as u64, n)));
        let (_, keys, slots, segments) = fields(&f.encode());
        let expected = mixture(slots, segments);
        assert!(
            (f.estimated_fpr() - expected).abs() <= 1e-12 * expected,
            "n={n}: estimate {} vs mixture {expected}",
            f.estimated_fpr()
        );
        let hits = count_hits(&probes, |h| f.may_contain(h));
        assert_rate_near(&format!("n={n} case {i}"), hits, trials, expected, 0.0);
        assert_eq!(keys, n as u64);
        assert!((f.fill_ratio() - n as f64 / slots as f64).abs() < 1e-12);
    }
}

/// `with_fpr(p)` meets `p` (the mixture, and the measurement) at about
/// `log2(1/p)·(1 + ε)` bits per key, never below the information bound.
#[test]
fn target_fpr_is_met_near_the_bound() {
    let probes = hashes(0xbeef, 1_000_000);
    for (i, &(n, fpr, max_bits)) in [
        // ε ≈ 3.6% at 100K keys (config.rs): 6.72 bits for the mixture at
        // 1%, times 1.036, plus rounding to whole segments.
        (100_000usize, 0.01, 7.05),
        (100_000, 0.001, 10.45),
        (10_000, 0.05, 4.7),
    ]
    .iter()
    .enumerate()
    {
        let f = ribbon(build(
            RibbonBuilder::with_fpr(fpr).unwrap(),
            &hashes(100 + i as u64, n),
        ));
        assert!(f.estimated_fpr() <= fpr);
        let hits = count_hits(&probes, |h| f.may_contain(h));
        assert_rate_at_most(&format!("fpr {fpr}"), hits, probes.len() as u64, fpr);
        let bits = f.size_bytes() as f64 * 8.0 / n as f64;
        assert!(
            bits >= -fpr.log2() && bits <= max_bits,
            "{bits} bits/key for FPR {fpr}"
        );
    }
}

/// `new(b)` spends `b` bits per key to within half a segment (64 bits) in
/// total.
#[test]
fn bits_per_key_achieved_match_the_request() {
    for (i, &(n, bits_per_key)) in [
        (100_000usize, 7.0),
        (100_000, 6.3),
        (50_000, 9.77),
        (10_000, 13.0),
        (3_000, 2.5),
    ]
    .iter()
    .enumerate()
    {
        let f = ribbon(build(
            RibbonBuilder::new(bits_per_key).unwrap(),
            &hashes(200 + i as u64, n),
        ));
        let total_bits = f.size_bytes() as f64 * 8.0;
        assert!(
            (total_bits - bits_per_key * n as f64).abs() <= 64.0,
            "{total_bits} bits for {n} keys at {bits_per_key}"
        );
    }
}

/// Where Ribbon cannot be smaller at the same FPR, the builder returns the
/// blocked Bloom filter, which holds every key and answers like one built
/// directly.
#[test]
fn fallback_is_taken_when_ribbon_cannot_be_smaller() {
    // A Ribbon filter has at least one 128-slot block: for a few keys it is
    // larger than one 64-byte Bloom block (or, at 0.1 bits/key, no
    // columns at all: FPR 1).
    for (n, builder, bloom_bits) in [
        (5usize, RibbonBuilder::with_fpr(0.01).unwrap(), None),
        (10, RibbonBuilder::new(10.0).unwrap(), Some(10.0)),
        (20, RibbonBuilder::new(0.1).unwrap(), Some(0.1)),
        (40, RibbonBuilder::new(16.0).unwrap(), Some(16.0)),
    ] {
        let members = hashes(n as u64, n);
        let f = build(builder, &members);
        let StaticFilter::Bloom(bloom) = &f else {
            panic!("{n} keys: expected the Bloom fallback");
        };
        assert!(members.iter().all(|&h| f.may_contain(h)));
        if let Some(bits) = bloom_bits {
            assert_eq!(bloom, &BlockedBloom::from_hashes(&members, bits).unwrap());
        }
        let non_members = hashes(0xabc, 10_000);
        let hits = count_hits(&non_members, |h| f.may_contain(h));
        assert_rate_near("fallback", hits, 10_000, f.estimated_fpr(), 0.5);
        assert_eq!(StaticFilter::decode(&f.encode()).unwrap(), f);
    }
}

#[test]
fn empty_set_gives_a_filter_that_rejects_everything() {
    let builder = RibbonBuilder::new(10.0).unwrap();
    assert!(builder.is_empty());
    let f = ribbon(builder.finish());
    assert_eq!(f.size_bytes(), 0);
    assert_eq!(count_hits(&hashes(1, 10_000), |h| f.may_contain(h)), 0);
    assert_eq!((f.estimated_fpr(), f.fill_ratio()), (0.0, 0.0));
    assert_eq!(f.estimated_count(), Some(0.0));
    assert_eq!(Ribbon::decode(&f.encode()).unwrap(), f);
}

#[test]
fn builder_counts_what_was_added() {
    let mut b = RibbonBuilder::with_fpr(0.01).unwrap();
    hashes(1, 7).into_iter().for_each(|h| b.add(h));
    b.add(key_hash(1, 0));
    assert_eq!((b.len(), b.is_empty()), (8, false));
}

/// Each variant decodes through `StaticFilter::decode` to an equal filter
/// that answers identically; the concrete decoders refuse the other kind.
#[test]
fn decode_of_each_static_filter_variant() {
    let probes = hashes(0x5eed, 20_000);
    let members = hashes(9, 20_000);
    for f in [
        build(RibbonBuilder::with_fpr(0.01).unwrap(), &members),
        build(RibbonBuilder::with_fpr(0.01).unwrap(), &members[..5]),
    ] {
        let bytes = f.encode();
        let back = StaticFilter::decode(&bytes).unwrap();
        assert_eq!(back, f);
        assert!(
            probes
                .iter()
                .all(|&h| back.may_contain(h) == f.may_contain(h))
        );
        assert_eq!(back.size_bytes(), f.size_bytes());
        match &f {
            StaticFilter::Ribbon(r) => {
                assert_eq!(codec::peek_kind(&bytes), Ok(FilterKind::Ribbon));
                assert_eq!(&Ribbon::decode(&bytes).unwrap(), r);
                assert!(matches!(
                    BlockedBloom::decode(&bytes),
                    Err(DecodeError::WrongKind { .. })
                ));
            }
            StaticFilter::Bloom(b) => {
                assert_eq!(&BlockedBloom::decode(&bytes).unwrap(), b);
                assert_eq!(
                    Ribbon::decode(&bytes),
                    Err(DecodeError::WrongKind {
                        expected: FilterKind::Ribbon,
                        found: FilterKind::BlockedBloom
                    })
                );
            }
            other => assert_eq!(
                other.kind(),
                FilterKind::Ribbon,
                "a Ribbon builder's output"
            ),
        }
    }
    // Other kinds are refused by name.
    let standard = StandardBloom::with_fpr(10, 0.01).unwrap().encode();
    assert_eq!(
        StaticFilter::decode(&standard),
        Err(DecodeError::WrongKind {
            expected: FilterKind::Ribbon,
            found: FilterKind::StandardBloom
        })
    );
}

/// Golden encoding: pins the envelope, the body layout, the hashing of a
/// key into its equation and the back-substitution.
///
/// Two keys ("sift", "key") at FPR 1/4: one block of 128 slots (so both start at slot 0),
/// two columns (32 bytes, against a 64-byte Bloom block). Under seed 0 key
/// `k` has `x = mix64(lo ^ s_lo)`, `y = mix64(hi ^ s_hi)`, coefficients
/// `c = mix64(y ^ C) ‖ y | 1` (high ‖ low) and result bits `x & 3`, with
/// `s_lo = mix64(SplitMix64 step)`, `s_hi = mix64(s_lo ^ split)`. Banding
/// puts "sift" at slot 0 and "ribbon", reduced by it, at slot
/// `t = tz(c1 ^ c2)` with result `r1 ^ r2`; back-substitution sets slot `t`
/// to `r1 ^ r2`, every free slot to 0, and slot 0 to `r1` XOR (bit `t` of
/// `c1` AND slot `t`), column by column.
#[test]
fn golden_encoding() {
    let keys = [KeyHash::of(b"sift"), KeyHash::of(b"key")];
    let f = ribbon(build(RibbonBuilder::with_fpr(0.25).unwrap(), &keys));
    let bytes = f.encode();

    let s_lo = mix64(0x9e37_79b9_7f4a_7c15);
    let s_hi = mix64(s_lo ^ 0xd1b5_4a32_d192_ed03);
    let eq = |k: KeyHash| {
        let x = mix64(k.lo() ^ s_lo);
        let y = mix64(k.hi() ^ s_hi);
        let c = (u128::from(mix64(y ^ 0x9e37_79b9_7f4a_7c15)) << 64) | u128::from(y) | 1;
        (c, x & 3)
    };
    let ((c1, r1), (c2, r2)) = (eq(keys[0]), eq(keys[1]));
    let t = (c1 ^ c2).trailing_zeros();
    let mut columns = [0u128; 2];
    for (j, col) in columns.iter_mut().enumerate() {
        let at_t = ((r1 ^ r2) >> j) & 1;
        let at_0 = ((r1 >> j) & 1) ^ (((c1 >> t) & 1) as u64 & at_t);
        *col = (u128::from(at_t) << t) | u128::from(at_0);
    }
    let mut w = Writer::new();
    w.u32(0).u64(2).u64(128).u64(2);
    for col in columns {
        w.words(&[col as u64, (col >> 64) as u64]);
    }
    assert_eq!(bytes, codec::seal(FilterKind::Ribbon, w));

    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    // "SFLT", v1, kind 3, hash 1, flags 0, body 60 bytes: seed 0, 2 keys,
    // 128 slots, 2 segments; then each column's two words: here `t = 3`,
    // slot 3 holds `r1 ^ r2 = 0b11` and slot 0 `r1 ^ c1[3]·0b11 = 0b11`, so
    // both columns are 0b1001; then the checksum.
    assert_eq!(hex, GOLDEN);
}

const GOLDEN: &str = "53464c54010301003c00000000000000020000000000000080000000000000000200000000000000\
                      0900000000000000000000000000000009000000000000000000000000000000fbafd8d28fc74f8f";

#[test]
fn builder_parameters_are_checked() {
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert!(
            matches!(RibbonBuilder::new(bad), Err(Error::InvalidParameter(_))),
            "{bad}"
        );
    }
    for bad in [0.0, 1.0, -0.1, 1.5, f64::NAN, f64::INFINITY] {
        assert!(
            matches!(
                RibbonBuilder::with_fpr(bad),
                Err(Error::InvalidParameter(_))
            ),
            "{bad}"
        );
    }
    assert!(RibbonBuilder::new(1e-9).is_ok());
    assert!(RibbonBuilder::with_fpr(1e-30).is_ok());
}

/// Every way a Ribbon body can be invalid has its error.
#[test]
fn decode_reports_the_right_error() {
    let f = ribbon(build(
        RibbonBuilder::with_fpr(0.01).unwrap(),
        &hashes(3, 1_000),
    ));
    let bytes = f.encode();
    let (seed, keys, slots, segments) = fields(&bytes);
    let words: Vec<u64> = {
        let mut r = codec::open(&bytes, FilterKind::Ribbon).unwrap();
        r.bytes(28).unwrap();
        r.words(2 * segments as usize).unwrap()
    };
    assert_eq!(
        Ribbon::decode(&forged(seed, keys, slots, segments, &words)).unwrap(),
        f
    );
    let invalid = |b: &[u8]| match Ribbon::decode(b) {
        Err(DecodeError::Invalid(why)) => why,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        invalid(&forged(16, keys, slots, segments, &words)),
        "Ribbon seed out of range"
    );
    assert_eq!(
        invalid(&forged(0, 1, 1 << 41, 0, &[])),
        "Ribbon slot count too large"
    );
    assert_eq!(
        invalid(&forged(seed, keys, slots + 1, segments, &words)),
        "Ribbon slots or segments out of range"
    );
    let too_many = slots / 128 * 64 + 1;
    assert_eq!(
        invalid(&forged(seed, keys, slots, too_many, &[])),
        "Ribbon slots or segments out of range"
    );
    assert_eq!(
        invalid(&forged(seed, slots + 1, slots, segments, &words)),
        "Ribbon key count disagrees with slots"
    );
    assert_eq!(
        invalid(&forged(seed, 0, slots, segments, &words)),
        "Ribbon key count disagrees with slots"
    );
    assert_eq!(
        invalid(&forged(seed, 1, 0, 0, &[])),
        "Ribbon key count disagrees with slots"
    );
    assert!(matches!(
        Ribbon::decode(&forged(seed, keys, slots, segments, &words[1..])),
        Err(DecodeError::Truncated { .. })
    ));
    let mut longer = words.clone();
    longer.push(0);
    assert_eq!(
        Ribbon::decode(&forged(seed, keys, slots, segments, &longer)),
        Err(DecodeError::TrailingBytes(8))
    );
    assert!(matches!(
        Ribbon::decode(&bytes[..5]),
        Err(DecodeError::Truncated { .. })
    ));
    let mut wrong = bytes.clone();
    wrong[5] = 1;
    assert!(matches!(
        Ribbon::decode(&wrong),
        Err(DecodeError::WrongKind { .. })
    ));
}
