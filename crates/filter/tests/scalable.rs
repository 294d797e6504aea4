//! Scalable Bloom: no false negatives, FPR under the target however far the
//! filter grows, logarithmic stage count, encoding and its decoder's errors.
mod common;

use common::*;
use proptest::prelude::*;
use sift_filter::codec::{self, FilterKind, Writer};
use sift_filter::{DecodeError, Filter, KeyHash, ScalableBloom};

/// Body offsets of the encoding: four 8-byte parameters, the stage count,
/// then the stages.
const GROWTH_AT: usize = 16;
const COUNT_AT: usize = 32;
const STAGES_AT: usize = 36;

/// Applies `patch` to the body of `bytes` and seals it again, so the
/// decoder's field checks (not the checksum) must catch the damage.
fn resealed(bytes: &[u8], patch: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut body = bytes[12..bytes.len() - 8].to_vec();
    patch(&mut body);
    let mut w = Writer::new();
    w.bytes(&body);
    codec::seal(FilterKind::ScalableBloom, w)
}

fn put_f64(body: &mut [u8], at: usize, v: f64) {
    body[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every member is found, and `insert` reports exactly what a query
    /// just before it would have answered.
    #[test]
    fn no_false_negatives_and_insert_reports_prior_membership(
        n in 0usize..3_000,
        initial in 1u64..300,
        fpr_exp in 1i32..5,
        growth in 1.0f64..4.0,
        tightening in 0.5f64..0.95,
        seed: u64,
    ) {
        let members = hashes(seed, n);
        let mut f = ScalableBloom::with_growth(initial, 10f64.powi(-fpr_exp), growth, tightening).unwrap();
        for &h in &members {
            let before = f.may_contain(h);
            prop_assert_eq!(f.insert(h), before);
            prop_assert!(f.may_contain(h));
        }
        for &h in &members {
            prop_assert!(f.may_contain(h));
            prop_assert!(f.insert(h));
        }
        prop_assert!(f.num_stages() <= ScalableBloom::MAX_STAGES);
        prop_assert_eq!(ScalableBloom::decode(&f.encode()).unwrap(), f);
    }

    #[test]
    fn damaged_encodings_error_or_decode_but_never_panic(n in 0usize..300, initial in 1u64..50, seed: u64) {
        let mut f = ScalableBloom::new(initial, 0.01).unwrap();
        hashes(seed, n).into_iter().for_each(|h| { f.insert(h); });
        for bytes in damaged_variants(&f.encode(), 64) {
            // Any byte flip is caught by the checksum; truncations by lengths.
            prop_assert!(ScalableBloom::decode(&bytes).is_err());
        }
    }

    #[test]
    fn random_bytes_never_decode(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        prop_assert!(ScalableBloom::decode(&bytes).is_err());
    }
}

/// Grows from 1,000 to 1,000,000 keys out of a first stage of 100: the
/// measured FPR stays under the 1% target at every checkpoint, tracks the
/// filter's own estimate, and the stage count follows `log2(n/n₀ + 1)`
/// (stages of 100·2ⁱ keys: 100·(2^s - 1) keys fill `s` stages).
///
/// The estimate `1 - Π(1 - fpr_i)` treats the stages as independent; their
/// probes reuse the same hash, which may correlate them, but the union
/// bound `Σ fpr_i` differs from it by `Σ fpr_i·fpr_j` < 1e-4 of the rate
/// here, so 2% model error is generous.
#[test]
fn fpr_stays_under_target_as_the_filter_grows() {
    let (initial, target) = (100u64, 0.01);
    let mut f = ScalableBloom::new(initial, target).unwrap();
    let members = hashes(1, 1_000_000);
    let probes = hashes(0xfeed, 200_000);
    let trials = probes.len() as u64;
    let mut inserted = 0;
    for checkpoint in [1_000, 10_000, 100_000, 300_000, 1_000_000] {
        for &h in &members[inserted..checkpoint] {
            f.insert(h);
        }
        inserted = checkpoint;
        let hits = count_hits(&probes, |h| f.may_contain(h));
        let what = format!("n = {checkpoint}");
        assert_rate_at_most(&what, hits, trials, target);
        assert_rate_near(&what, hits, trials, f.estimated_fpr(), 0.02);
        assert!(
            f.estimated_fpr() < target,
            "{what}: estimate {}",
            f.estimated_fpr()
        );
        let expected_stages = (checkpoint as f64 / initial as f64 + 1.0).log2();
        let stages = f.num_stages() as f64;
        assert!(
            (stages - expected_stages).abs() <= 1.0,
            "{what}: {stages} stages, expected ≈ {expected_stages:.2}"
        );
        let count = f.estimated_count().unwrap();
        assert!(
            (count - checkpoint as f64).abs() / (checkpoint as f64) < 0.03,
            "{what}: count {count}"
        );
    }
}

/// The same promise for a first stage of one key, fast growth (4) and the
/// loose tightening 0.9 at a 0.1% target: the first stages are tiny (a few
/// bits per partition) and still keep their share.
#[test]
fn fpr_stays_under_target_from_a_single_key_stage() {
    let target = 0.001;
    let mut f = ScalableBloom::with_growth(1, target, 4.0, 0.9).unwrap();
    let members = hashes(2, 200_000);
    let probes = hashes(0xbeef, 400_000);
    let trials = probes.len() as u64;
    let mut inserted = 0;
    for checkpoint in [10, 100, 1_000, 20_000, 200_000] {
        for &h in &members[inserted..checkpoint] {
            f.insert(h);
        }
        inserted = checkpoint;
        let hits = count_hits(&probes, |h| f.may_contain(h));
        let what = format!("n = {checkpoint}");
        assert_rate_at_most(&what, hits, trials, target);
        assert_rate_near(&what, hits, trials, f.estimated_fpr(), 0.02);
        // Stages of 4ⁱ keys: (4^s - 1)/3 keys fill s stages.
        let expected_stages = (3.0 * checkpoint as f64 + 1.0).log(4.0);
        let stages = f.num_stages() as f64;
        assert!(
            (stages - expected_stages).abs() <= 1.0,
            "{what}: {stages} stages, expected ≈ {expected_stages:.2}"
        );
    }
}

/// Golden encoding: pins the envelope, the parameters, the stage sizing,
/// the growth trigger, the probes and the hash.
#[test]
fn golden_encoding() {
    // p = 0.5, r = 0.5: stage 0 has share p(1 - r) = 0.25, so k = 2 and
    // ⌈1·2/ln 2⌉ = 3 → 4 bits (partitions of 2); stage 1 has share 0.125,
    // k = 3, capacity 2 and ⌈2·3/ln 2⌉ = 9 bits (partitions of 3).
    let mut f = ScalableBloom::with_growth(1, 0.5, 2.0, 0.5).unwrap();
    // "sift": top bits of mix64(g_0) = 0xdc9d… and mix64(g_1) = 0xc044…
    // are 1 and 1: bits 0+1 and 2+1, so stage 0 holds 0b1010 and is half
    // full (2 set + k = 2 > 4/2).
    assert!(!f.insert(KeyHash::of(b"sift")));
    // (lo, hi) = (0, 0): g = 0, 0, 1 and mix64 = 0, 0, 0x5692…: absent from
    // stage 0 (bits 0 and 2), so stage 1 opens and gets bits 0, 3 + 0 and
    // 6 + fastrange(0x5692…, 3) = 6 + 1, i.e. 0b1000_1001.
    assert!(!f.insert(KeyHash::from_parts(0, 0)));
    assert_eq!(f.num_stages(), 2);
    let hex: String = f.encode().iter().map(|b| format!("{b:02x}")).collect();
    // "SFLT", v1, kind 6, hash 1, flags 0, body 76 bytes: n₀ = 1, p = 0.5,
    // s = 2.0, r = 0.5, 2 stages; (k = 2, m = 4, 0x0a), (k = 3, m = 9,
    // 0x89); then the xxh3_64 checksum.
    assert_eq!(
        hex,
        "53464c54010601004c000000\
         0100000000000000000000000000e03f0000000000000040000000000000e03f02000000\
         0200000004000000000000000a00000000000000\
         0300000009000000000000008900000000000000\
         bae195a902879d8c"
    );
}

#[test]
fn decode_reports_the_right_error() {
    let mut f = ScalableBloom::new(10, 0.01).unwrap();
    hashes(5, 100).into_iter().for_each(|h| {
        f.insert(h);
    });
    let bytes = f.encode();
    assert_eq!(ScalableBloom::decode(&resealed(&bytes, |_| ())).unwrap(), f);
    assert!(matches!(
        ScalableBloom::decode(&bytes[..5]),
        Err(DecodeError::Truncated { .. })
    ));
    let mut wrong = bytes.clone();
    wrong[5] = FilterKind::PartitionedBloom as u8;
    assert!(matches!(
        ScalableBloom::decode(&wrong),
        Err(DecodeError::WrongKind { .. })
    ));

    let invalid = |why: &'static str, patch: &dyn Fn(&mut Vec<u8>)| {
        assert_eq!(
            ScalableBloom::decode(&resealed(&bytes, patch)),
            Err(DecodeError::Invalid(why))
        );
    };
    invalid("initial capacity must be at least 1", &|b| b[..8].fill(0));
    invalid("target FPR must be in (0, 1)", &|b| put_f64(b, 8, 1.0));
    invalid("non-finite float", &|b| put_f64(b, 8, f64::NAN));
    invalid("growth factor must be in [1, 16]", &|b| {
        put_f64(b, GROWTH_AT, 0.5)
    });
    invalid("growth factor must be in [1, 16]", &|b| {
        put_f64(b, GROWTH_AT, 17.0)
    });
    invalid("tightening ratio must be in (0, 1)", &|b| {
        put_f64(b, 24, 1.0)
    });
    invalid("initial capacity too large for one stage", &|b| {
        b[..8].fill(0xff)
    });
    invalid("stage count out of range", &|b| {
        b[COUNT_AT..STAGES_AT].fill(0)
    });
    invalid("stage count out of range", &|b| {
        b[COUNT_AT..STAGES_AT].copy_from_slice(&65u32.to_le_bytes())
    });
    // Different parameters imply different stage shapes.
    invalid("stage shape disagrees with the growth parameters", &|b| {
        put_f64(b, GROWTH_AT, 3.0)
    });
    invalid("stage shape disagrees with the growth parameters", &|b| {
        b[0] = 11
    });
    // A stage count above what is stored runs out of input.
    let more = resealed(&bytes, |b| {
        let count = f.num_stages() as u32 + 1;
        b[COUNT_AT..STAGES_AT].copy_from_slice(&count.to_le_bytes());
    });
    assert!(matches!(
        ScalableBloom::decode(&more),
        Err(DecodeError::Truncated { .. })
    ));
    let fewer = resealed(&bytes, |b| {
        let count = f.num_stages() as u32 - 1;
        b[COUNT_AT..STAGES_AT].copy_from_slice(&count.to_le_bytes());
    });
    assert!(matches!(
        ScalableBloom::decode(&fewer),
        Err(DecodeError::TrailingBytes(_))
    ));
}

/// A forged filter whose current stage is saturated decodes (every field is
/// valid) and then answers, inserts and estimates without panicking.
#[test]
fn saturated_forgery_decodes_and_answers() {
    let f = ScalableBloom::new(1, 0.01).unwrap();
    let bytes = resealed(&f.encode(), |b| {
        // Stage 0: k (4 bytes), m (8 bytes), then its words: set every bit.
        let words = STAGES_AT + 12;
        let m = u64::from_le_bytes(b[STAGES_AT + 4..words].try_into().unwrap());
        assert!(m < 64);
        b[words..words + 8].copy_from_slice(&((1u64 << m) - 1).to_le_bytes());
    });
    let mut g = ScalableBloom::decode(&bytes).unwrap();
    assert!(g.may_contain(KeyHash::of(b"anything")));
    assert!(g.insert(KeyHash::of(b"anything")));
    assert_eq!(g.fill_ratio(), 1.0);
    assert_eq!(g.estimated_fpr(), 1.0);
    assert!(g.estimated_count().unwrap().is_infinite());
    assert_eq!(g.num_stages(), 1);
}
