//! The range filter: no false negatives on any keys and ranges, measured
//! FPR under the bound `ℓ · n / r` on random and on clustered keys, size
//! per key, encoding and decoding.
mod common;

use common::*;
use proptest::prelude::*;
use sift_filter::codec::{self, FilterKind, Writer};
use sift_filter::{
    AnyFilter, BlockedBloom, DecodeError, Error, RangeFilter, StaticFilter, math, mix64,
};

/// SplitMix64: a fixed-seed stream of well-mixed `u64`s.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.0)
    }

    /// Uniform in `lo..=hi` (up to a bias of `(hi - lo) / 2^64`).
    fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + sift_filter::fastrange64(self.next(), hi - lo + 1)
    }
}

/// Whether the sorted `keys` hold nothing in `[lo, hi]`.
fn is_empty(keys: &[u64], lo: u64, hi: u64) -> bool {
    let at = keys.partition_point(|&k| k < lo);
    keys.get(at).is_none_or(|&k| k > hi)
}

/// `count` ranges of `len` keys, each starting where `place` says and
/// kept only if it holds none of the sorted `keys`.
fn empty_ranges(
    keys: &[u64],
    len: u64,
    count: usize,
    rng: &mut Rng,
    mut place: impl FnMut(&mut Rng) -> u64,
) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let lo = place(rng);
        if let Some(hi) = lo.checked_add(len - 1)
            && is_empty(keys, lo, hi)
        {
            out.push((lo, hi));
        }
    }
    out
}

fn false_positives(f: &RangeFilter, ranges: &[(u64, u64)]) -> u64 {
    ranges
        .iter()
        .filter(|&&(lo, hi)| f.may_contain_range(lo, hi))
        .count() as u64
}

/// Keys that stress the block structure: anywhere, near both ends of
/// `u64`, and just around multiples of powers of two (block boundaries,
/// whatever `L` is).
fn key() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        0u64..1_000,
        (u64::MAX - 1_000)..=u64::MAX,
        (0u32..64, -4i64..=4).prop_map(|(k, d)| (1u64 << k).wrapping_add_signed(d)),
        (any::<u64>(), 0u32..64, -4i64..=4)
            .prop_map(|(x, k, d)| ((x >> k) << k).wrapping_add_signed(d)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every range that holds a key answers true: ranges grown around each
    /// key by small and large reaches (clamped at 0 and `u64::MAX`), and
    /// random ranges checked against the exact set.
    #[test]
    fn no_false_negatives(
        keys in proptest::collection::vec(key(), 0..200),
        bits_per_key in 2.0f64..26.0,
        reaches in proptest::collection::vec((0u64..5_000, 0u64..5_000), 1..6),
        far: u64,
        randoms in proptest::collection::vec((key(), 0u64..100_000), 0..50),
    ) {
        let f = RangeFilter::build(keys.iter().copied(), bits_per_key).unwrap();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        sorted.dedup();
        prop_assert_eq!(f.num_keys(), sorted.len() as u64);
        for &x in &keys {
            prop_assert!(f.may_contain(x));
            prop_assert!(f.may_contain_range(x.saturating_sub(far), x));
            prop_assert!(f.may_contain_range(x, x.saturating_add(far)));
            prop_assert!(f.may_contain_range(0, u64::MAX));
            for &(down, up) in &reaches {
                let (lo, hi) = (x.saturating_sub(down), x.saturating_add(up));
                prop_assert!(f.may_contain_range(lo, hi), "[{}, {}] around {}", lo, hi, x);
            }
        }
        for &(lo, len) in &randoms {
            let hi = lo.saturating_add(len);
            if !is_empty(&sorted, lo, hi) {
                prop_assert!(f.may_contain_range(lo, hi), "[{}, {}]", lo, hi);
            }
        }
        prop_assert!(!f.may_contain_range(5, 4));
    }

    #[test]
    fn round_trips_and_damage_never_decodes(
        keys in proptest::collection::vec(key(), 0..300),
        bits_per_key in 2.0f64..20.0,
        seed: u64,
    ) {
        let f = RangeFilter::build_with_seed(keys.iter().copied(), bits_per_key, seed).unwrap();
        let bytes = f.encode();
        let back = RangeFilter::decode(&bytes).unwrap();
        prop_assert_eq!(&back, &f);
        prop_assert_eq!(back.encode(), bytes.clone());
        for &x in &keys {
            prop_assert!(back.may_contain(x));
        }
        // Byte flips are caught by the checksum; cuts and growth by lengths.
        for damaged in damaged_variants(&bytes, 64) {
            prop_assert!(RangeFilter::decode(&damaged).is_err());
        }
    }

    #[test]
    fn random_bytes_never_decode(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        prop_assert!(RangeFilter::decode(&bytes).is_err());
    }

    /// A real filter's body with one byte replaced, resealed with a valid
    /// checksum: an error, or a filter that answers without panicking and
    /// re-encodes to the same bytes. About 30% decode (a changed seed,
    /// a larger key count, a low bit that keeps the values increasing).
    #[test]
    fn resealed_damage_errors_or_answers(
        keys in proptest::collection::vec(0u64..2_000, 0..40),
        bits_per_key in 2.0f64..12.0,
        at: prop::sample::Index,
        byte: u8,
    ) {
        let bytes = RangeFilter::build(keys, bits_per_key).unwrap().encode();
        let mut body = bytes[12..bytes.len() - 8].to_vec();
        let at = at.index(body.len());
        body[at] = byte;
        let mut w = Writer::new();
        w.bytes(&body);
        let resealed = codec::seal(FilterKind::RangeFilter, w);
        if let Ok(f) = RangeFilter::decode(&resealed) {
            for (lo, hi) in [(0, 0), (0, 20), (3, 900), (0, u64::MAX), (u64::MAX, u64::MAX)] {
                let _ = f.may_contain_range(lo, hi);
            }
            prop_assert!(f.expected_fpr(1) <= 1.0);
            prop_assert_eq!(f.encode(), resealed);
        }
    }
}

/// A sealed kind-9 encoding with any body fields, valid or not.
#[expect(clippy::too_many_arguments, reason = "one argument per body field")]
fn forged(
    keys: u64,
    space: u64,
    shift: u8,
    seed: u64,
    low_bits: u8,
    count: u64,
    low: &[u64],
    high: &[u64],
) -> Vec<u8> {
    let mut w = Writer::new();
    w.u64(keys)
        .u64(space)
        .u8(shift)
        .u64(seed)
        .u8(low_bits)
        .u64(count)
        .words(low)
        .words(high);
    codec::seal(FilterKind::RangeFilter, w)
}

/// Random keys, then empty ranges placed uniformly in `u64`. Every key and
/// every range sits in a block of its own (about `10^5 · 2^26 / 2^64`, one
/// in 3 million, share one), so the `n` hash values are independent and
/// uniform and a range is a false positive with probability exactly
/// `1 - (1 - ℓ/r)^n`, a little under the bound `ℓn/r`. Each query is an
/// independent trial: the measured rate lies within `Z` binomial
/// deviations of that expectation, which checks the upper bound (the
/// guarantee) and that the filter does not answer "maybe" too rarely.
#[test]
fn fpr_of_random_keys_is_under_the_bound() {
    let n = 100_000;
    let queries = 200_000;
    let mut rng = Rng(1);
    let mut keys: Vec<u64> = (0..n).map(|_| rng.next()).collect();
    keys.sort_unstable();
    keys.dedup();
    for bits_per_key in [10.0, 12.0] {
        let f = RangeFilter::build(keys.iter().copied(), bits_per_key).unwrap();
        for len in [1u64, 16, 1_024] {
            let ranges = empty_ranges(&keys, len, queries, &mut rng, Rng::next);
            let hits = false_positives(&f, &ranges);
            let bound = f.expected_fpr(len);
            assert_eq!(bound, math::range_filter_fpr(len, bits_per_key));
            let r = f.hash_space() as f64;
            let exact = 1.0 - (1.0 - len as f64 / r).powf(f.num_keys() as f64);
            let what = format!("random B={bits_per_key} len={len}");
            eprintln!(
                "{what}: measured {:.6}, exact {exact:.6}, bound {bound:.6}",
                hits as f64 / queries as f64
            );
            assert_rate_at_most(&what, hits, queries as u64, bound);
            assert_rate_near(&what, hits, queries as u64, exact, 0.0);
        }
    }
}

/// 1,000 clusters at random places, each of 100 keys in runs of 1 to 16
/// consecutive integers separated by gaps of 1 to 64; empty ranges in and
/// around the clusters, mostly in the same block as a cluster.
///
/// The bound holds on average over the seed, and here one filter's FPR
/// varies with it: the runs of two clusters whose blocks land on nearby
/// hash values interleave, and either miss a range's arcs or hit many of
/// them at once. So the rate is measured over 16 seeds, and the tolerance
/// is `Z` standard errors of the mean of the 16 per-seed rates (their
/// sample deviation, which includes the binomial noise, over √16), at
/// least `Z` binomial deviations of all the queries together. Only the
/// upper bound is checked: ranges between keys of one cluster are never
/// false positives, so clustered keys may do far better than the bound.
#[test]
fn fpr_of_clustered_keys_is_under_the_bound() {
    let (clusters, per_cluster, seeds, queries) = (1_000, 100, 16u64, 25_000);
    let mut rng = Rng(2);
    let mut spans = Vec::new();
    let mut keys = Vec::new();
    for _ in 0..clusters {
        let start = rng.between(1 << 20, u64::MAX - (1 << 20));
        let mut at = start;
        let mut held = 0;
        while held < per_cluster {
            for _ in 0..rng.between(1, 16).min(per_cluster - held) {
                keys.push(at);
                at += 1;
                held += 1;
            }
            at += rng.between(1, 64);
        }
        spans.push((start, at));
    }
    keys.sort_unstable();
    keys.dedup();
    for bits_per_key in [10.0, 12.0] {
        for len in [1u64, 16, 1_024] {
            let ranges = empty_ranges(&keys, len, queries, &mut rng, |rng| {
                let (start, end) = spans[rng.between(0, spans.len() as u64 - 1) as usize];
                rng.between(start - 2 * len - 64, end + 64)
            });
            let rates: Vec<f64> = (0..seeds)
                .map(|seed| {
                    let f = RangeFilter::build_with_seed(keys.iter().copied(), bits_per_key, seed)
                        .unwrap();
                    false_positives(&f, &ranges) as f64 / queries as f64
                })
                .collect();
            let bound = math::range_filter_fpr(len, bits_per_key);
            let mean = rates.iter().sum::<f64>() / seeds as f64;
            let var = rates.iter().map(|p| (p - mean).powi(2)).sum::<f64>() / (seeds - 1) as f64;
            let tolerance = Z
                * (var / seeds as f64)
                    .sqrt()
                    .max(sigma(bound, seeds * queries as u64));
            eprintln!(
                "clustered B={bits_per_key} len={len}: mean {mean:.6} (per seed {:.6}..{:.6}), bound {bound:.6} + {tolerance:.6}",
                rates.iter().copied().fold(1.0, f64::min),
                rates.iter().copied().fold(0.0, f64::max),
            );
            assert!(
                mean <= bound + tolerance,
                "clustered B={bits_per_key} len={len}: {mean} > {bound} + {tolerance}"
            );
        }
    }
}

#[test]
fn real_bits_per_key_is_close_to_the_request() {
    let mut rng = Rng(3);
    let keys: Vec<u64> = (0..100_000).map(|_| rng.next()).collect();
    for bits_per_key in [10.0, 12.0, 10.5] {
        let f = RangeFilter::build(keys.iter().copied(), bits_per_key).unwrap();
        let real = f.bits_per_key();
        eprintln!(
            "B={bits_per_key}: {real:.4} bits/key, {} bytes",
            f.size_bytes()
        );
        assert!(
            (real - bits_per_key).abs() < 0.6,
            "B={bits_per_key}: {real}"
        );
        // The encoding holds the two streams (34 bytes of parameters and 20
        // of envelope besides), not the select table: `floor(B - 2)` low
        // bits and `1 + 2^{frac(B)} ≤ 2 + frac(B)` high bits per key.
        let encoded = (f.encode().len() - 54) as f64 * 8.0 / 100_000.0;
        eprintln!("B={bits_per_key}: {encoded:.4} bits/key encoded");
        assert!(
            (bits_per_key - 0.15..=bits_per_key).contains(&encoded),
            "B={bits_per_key}: {encoded}"
        );
    }
    let f = RangeFilter::build(keys.iter().copied(), 12.0).unwrap();
    assert_eq!((f.hash_space(), f.block_len()), (102_400_000, 1 << 26));
}

/// Golden encoding: pins the envelope, the body layout, the block hash and
/// the Elias–Fano layout. If this changes, filters on disk are misread.
#[test]
fn golden_encoding() {
    // Keys 1, 5, 1000 at 4 bits/key: n = 3, r = 12, L = 8. With the
    // default seed, mix64(0 ^ seed) = 0xe9e0033e3badaf36 and
    // mix64(125 ^ seed) = 0x2eab0606f259f24e (computed with a separate
    // Python SplitMix64), so q(0) = 10 and q(125) = 2: h(1) = 11,
    // h(5) = 15 mod 12 = 3, h(1000) = 2 + 0 = 2. Values 2, 3, 11 below 12:
    // l = floor(log2 4) = 2, lows 2, 3, 3 (bits 0b11_11_10), highs 0, 0, 2
    // at bits 0, 1, 4 of 3 + 3 bits (0b01_0011).
    let f = RangeFilter::build([1000, 5, 1, 5], 4.0).unwrap();
    assert_eq!((f.num_keys(), f.hash_space(), f.block_len()), (3, 12, 8));
    let hex: String = f.encode().iter().map(|b| format!("{b:02x}")).collect();
    let expected = "53464c540109010032000000".to_owned() // header, body 50 bytes
        + "0300000000000000" // n = 3
        + "0c00000000000000" // r = 12
        + "03" // log2 L = 3
        + "d308a385886a3f24" // seed
        + "02" // l = 2
        + "0300000000000000" // 3 values
        + "3e00000000000000" // low bits
        + "1300000000000000" // high bits
        + "30824241d6348a4f"; // xxh3_64 checksum, recomputed with python-xxhash
    assert_eq!(hex, expected);
    assert_eq!(RangeFilter::decode(&f.encode()).unwrap(), f);
    // [2, 4] is block 0's offsets 2..4: hash values 0, 1, 2, where key
    // 1000 sits; a false positive. [6, 7] hashes to 4, 5: empty.
    assert!(f.may_contain(1) && f.may_contain(5) && f.may_contain(1000));
    assert!(f.may_contain_range(2, 4));
    assert!(!f.may_contain_range(6, 7));
    assert!(!f.may_contain(0));
}

#[test]
fn empty_filter_encodes_and_answers_no() {
    let f = RangeFilter::build(std::iter::empty(), 10.0).unwrap();
    let back = RangeFilter::decode(&f.encode()).unwrap();
    assert_eq!(back, f);
    assert!(!back.may_contain_range(0, u64::MAX));
    assert_eq!((back.num_keys(), back.hash_space()), (0, 1));
}

#[test]
fn invalid_bits_per_key_is_an_error() {
    for bad in [1.99, 0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert!(
            matches!(
                RangeFilter::build([1, 2], bad),
                Err(Error::InvalidParameter(_))
            ),
            "{bad}"
        );
    }
    assert!(RangeFilter::build([1, 2], 2.0).is_ok());
    // The hash space stops at 2^62; past it more bits buy nothing.
    let f = RangeFilter::build([1, 2], 1_000.0).unwrap();
    assert_eq!(f.hash_space(), math::RANGE_FILTER_MAX_HASH_SPACE);
    assert!(f.may_contain(1) && f.may_contain(2));
    assert_eq!(RangeFilter::decode(&f.encode()).unwrap(), f);
}

#[test]
fn decode_reports_the_right_error() {
    let invalid = |bytes: Vec<u8>| match RangeFilter::decode(&bytes) {
        Err(DecodeError::Invalid(why)) => why,
        other => panic!("expected Invalid, got {other:?}"),
    };
    // Values 2, 3 below 12 (l = 2): lows 0b1110, highs at bits 0 and 1.
    let good = |keys| forged(keys, 12, 3, 0, 2, 2, &[0b1110], &[0b11]);
    assert!(RangeFilter::decode(&good(2)).is_ok());
    assert!(RangeFilter::decode(&good(12)).is_ok());
    assert_eq!(invalid(good(1)), "value count disagrees with the key count");
    assert_eq!(invalid(good(13)), "hash space disagrees with the key count");
    let none = |keys, space, shift| forged(keys, space, shift, 0, 0, 0, &[], &[0]);
    assert!(RangeFilter::decode(&none(0, 1, 0)).is_ok());
    assert_eq!(
        invalid(none(0, 2, 1)),
        "hash space disagrees with the key count"
    );
    assert_eq!(
        invalid(none(1, 1, 0)),
        "value count disagrees with the key count"
    );
    assert_eq!(invalid(none(0, 0, 0)), "hash space out of range");
    assert_eq!(
        invalid(none(0, (1 << 62) + 1, 62)),
        "hash space out of range"
    );
    assert_eq!(
        invalid(forged(2, 12, 2, 0, 2, 2, &[0b1110], &[0b11])),
        "block length disagrees with the hash space"
    );
    assert_eq!(
        invalid(forged(2, 12, 3, 0, 1, 2, &[0b1110], &[0b11])),
        "low bit count disagrees with n and r"
    );
    assert!(matches!(
        RangeFilter::decode(&forged(2, 12, 3, 0, 2, 2, &[0b1110], &[])),
        Err(DecodeError::Truncated { .. })
    ));
    assert!(matches!(
        RangeFilter::decode(&forged(2, 12, 3, 0, 2, 2, &[0b1110], &[0b11, 0])),
        Err(DecodeError::TrailingBytes(8))
    ));
    // A forged count far past the input is refused before allocating.
    assert!(matches!(
        RangeFilter::decode(&forged(1 << 40, 1 << 42, 42, 0, 2, 1 << 40, &[], &[])),
        Err(DecodeError::Truncated { .. })
    ));
}

/// A range filter answers ranges of `u64`s, not key hashes: the key filter
/// decoders refuse it, and it refuses them, each with its reason.
#[test]
fn key_filter_decoders_refuse_a_range_filter() {
    let range = RangeFilter::build([1, 2, 3], 10.0).unwrap().encode();
    assert_eq!(
        AnyFilter::decode(&range).unwrap_err(),
        DecodeError::NotAKeyFilter(FilterKind::RangeFilter)
    );
    assert_eq!(
        StaticFilter::decode(&range).unwrap_err(),
        DecodeError::WrongKind {
            expected: FilterKind::Ribbon,
            found: FilterKind::RangeFilter
        }
    );
    let blocked = BlockedBloom::from_hashes(&hashes(1, 10), 10.0).unwrap();
    assert_eq!(
        RangeFilter::decode(&sift_filter::Filter::encode(&blocked)).unwrap_err(),
        DecodeError::WrongKind {
            expected: FilterKind::RangeFilter,
            found: FilterKind::BlockedBloom
        }
    );
    assert_eq!(codec::peek_kind(&range), Ok(FilterKind::RangeFilter));
}
