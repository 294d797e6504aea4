//! Counting Bloom: no false negatives under inserts and removes, removal
//! semantics (restoring, saturation, false positives), FPR, encoding.
mod common;

use std::collections::BTreeMap;

use common::*;
use proptest::prelude::*;
use sift_filter::codec::{self, FilterKind, Writer};
use sift_filter::{
    BloomShape, CountingBloom, DecodeError, Error, Filter, KeyHash, StandardBloom, math,
};

#[expect(
    clippy::unwrap_used,
    reason = "test helper: a bad shape is a bug in the test"
)]
fn filled(shape: BloomShape, members: &[KeyHash]) -> CountingBloom {
    let mut f = CountingBloom::new(shape).unwrap();
    members.iter().for_each(|&h| f.insert(h));
    f
}

/// One step of a random insert/remove sequence over a small key universe.
#[derive(Clone, Debug)]
enum Op {
    Insert(u64),
    Remove(u64),
}

fn op() -> impl Strategy<Value = Op> {
    // 40 keys so that keys recur and some counters climb to saturation.
    prop_oneof![
        (0u64..40).prop_map(Op::Insert),
        (0u64..40).prop_map(Op::Remove)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn no_false_negatives_after_removing_a_part(
        n in 0usize..4_000,
        bits_per_key in 2.0f64..20.0,
        seed: u64,
    ) {
        let members = hashes(seed, n);
        let mut f = filled(BloomShape::for_bits_per_key(n as u64, bits_per_key), &members);
        let (gone, kept) = members.split_at(n / 3);
        for &h in gone {
            prop_assert_eq!(f.remove(h), Ok(()));
        }
        for &h in kept {
            prop_assert!(f.may_contain(h));
        }
    }

    /// Random sequences against a multiset: every key inserted more often
    /// than removed is found; removing a key the filter proves absent fails
    /// and changes nothing.
    #[test]
    fn matches_a_multiset_model(
        ops in proptest::collection::vec(op(), 1..400),
        counters in 8u64..400,
        probes in 1u32..6,
        seed: u64,
    ) {
        let mut f = CountingBloom::new(BloomShape { bits: counters, probes }).unwrap();
        let mut model: BTreeMap<u64, u32> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Insert(k) => {
                    f.insert(key_hash(seed, k));
                    *model.entry(k).or_default() += 1;
                }
                Op::Remove(k) => {
                    let h = key_hash(seed, k);
                    match model.get_mut(&k) {
                        Some(copies) => {
                            prop_assert_eq!(f.remove(h), Ok(()));
                            *copies -= 1;
                            if *copies == 0 {
                                model.remove(&k);
                            }
                        }
                        // Removing an absent key that looks present would
                        // corrupt the counts (documented); only the provably
                        // absent ones are tried.
                        None if !f.may_contain(h) => {
                            let before = f.clone();
                            prop_assert_eq!(f.remove(h), Err(Error::NotPresent));
                            prop_assert_eq!(&f, &before);
                        }
                        None => {}
                    }
                }
            }
            for &k in model.keys() {
                prop_assert!(f.may_contain(key_hash(seed, k)), "key {} lost", k);
            }
        }
    }

    #[test]
    fn damaged_encodings_error_or_decode_but_never_panic(n in 0usize..300, seed: u64) {
        let f = filled(BloomShape::for_fpr(n as u64, 0.01), &hashes(seed, n));
        for bytes in damaged_variants(&f.encode(), 64) {
            // Any byte flip is caught by the checksum; truncations by lengths.
            prop_assert!(CountingBloom::decode(&bytes).is_err());
        }
    }

    #[test]
    fn random_bytes_never_decode(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        prop_assert!(CountingBloom::decode(&bytes).is_err());
    }
}

/// Counting and standard filters of one shape answer every query alike.
#[test]
fn answers_as_the_standard_bloom_of_the_same_shape() {
    let probes = hashes(0xbeef, 100_000);
    for (n, bits_per_key) in [(10u64, 4.0), (1_000, 10.0), (20_000, 7.0)] {
        let shape = BloomShape::for_bits_per_key(n, bits_per_key);
        let members = hashes(n, n as usize);
        let counting = filled(shape, &members);
        let mut standard = StandardBloom::new(shape).unwrap();
        members.iter().for_each(|&h| standard.insert(h));
        assert!(
            probes
                .iter()
                .all(|&h| counting.may_contain(h) == standard.may_contain(h))
        );
        assert_eq!(counting.fill_ratio(), standard.fill_ratio());
    }
}

/// Inserting A and B and removing B leaves exactly the filter of A: every
/// counter returns to its value, so every other key's answer is restored.
/// This holds while no counter saturates, which at optimal `k` happens with
/// probability below `1.37e-15 · m` (Fan et al. 2000).
#[test]
fn remove_restores_the_answers_of_the_other_keys() {
    let shape = BloomShape::for_fpr(10_000, 0.01);
    let (a, b) = (hashes(1, 5_000), hashes(2, 5_000));
    let only_a = filled(shape, &a);
    let mut f = filled(shape, &[a.clone(), b.clone()].concat());
    let probes = hashes(0xfeed, 100_000);
    let differing = count_hits(&probes, |h| f.may_contain(h) != only_a.may_contain(h));
    assert!(differing > 0, "B must have added positives");
    for &h in &b {
        f.remove(h).unwrap();
    }
    assert_eq!(f, only_a);
    assert!(a.iter().all(|&h| f.may_contain(h)));
}

/// Counters at 15 are sticky: twenty inserts saturate the key's counters,
/// after which removes leave them at 15, so the key is still (falsely)
/// reported present after all twenty removes, and further removes succeed.
/// Fourteen inserts do not saturate, and fourteen removes empty the filter.
#[test]
fn saturated_counters_stick() {
    let shape = BloomShape {
        bits: 1_000,
        probes: 4,
    };
    let h = key_hash(7, 0);
    let mut f = CountingBloom::new(shape).unwrap();
    for _ in 0..20 {
        f.insert(h);
    }
    for _ in 0..20 {
        f.remove(h).unwrap();
    }
    assert!(f.may_contain(h));
    assert_eq!(f.remove(h), Ok(()));

    let empty = CountingBloom::new(shape).unwrap();
    let mut f = empty.clone();
    for _ in 0..14 {
        f.insert(h);
    }
    for _ in 0..14 {
        f.remove(h).unwrap();
    }
    assert_eq!(f, empty);
    assert_eq!(f.remove(h), Err(Error::NotPresent));
}

/// Removing a key that was never inserted but whose counters are all
/// non-zero cannot be detected: it succeeds and decrements counters of a
/// member, which then becomes a false negative (documented on the type).
#[test]
fn removing_a_false_positive_succeeds_and_corrupts() {
    let shape = BloomShape { bits: 8, probes: 1 };
    let member = key_hash(1, 0);
    let mut f = filled(shape, &[member]);
    let impostor = hashes(2, 1_000)
        .into_iter()
        .find(|&h| f.may_contain(h))
        .expect("one key in eight collides");
    assert_eq!(f.remove(impostor), Ok(()));
    assert!(!f.may_contain(member), "the member's counter was taken");
    assert_eq!(f.remove(member), Err(Error::NotPresent));
}

#[test]
fn removing_an_absent_key_changes_nothing() {
    let members = hashes(3, 1_000);
    let mut f = filled(BloomShape::for_fpr(1_000, 0.01), &members);
    let before = f.clone();
    let absent: Vec<KeyHash> = hashes(4, 1_000)
        .into_iter()
        .filter(|&h| !f.may_contain(h))
        .collect();
    assert!(absent.len() > 950);
    for &h in &absent {
        assert_eq!(f.remove(h), Err(Error::NotPresent));
    }
    assert_eq!(f, before);
}

/// Measured FPR against `(1 - e^{-kn/m})^k`, and against `fill^k` of the
/// filter, also after removals. As for the standard Bloom (same probes), the
/// formula is within 1% once `m ≥ 1,000`; 3% model error is allowed.
#[test]
fn fpr_matches_formula_across_sizes_and_after_removals() {
    let probes = hashes(0xfeed, 400_000);
    let trials = probes.len() as u64;
    for (i, &(n, bits_per_key)) in [
        (1_000u64, 10.0),
        (10_000, 10.0),
        (50_000, 6.0),
        (100_000, 14.0),
    ]
    .iter()
    .enumerate()
    {
        let shape = BloomShape::for_bits_per_key(n, bits_per_key);
        let mut f = filled(shape, &hashes(i as u64, n as usize));
        let what = format!("n={n} bpk={bits_per_key}");
        let hits = count_hits(&probes, |h| f.may_contain(h));
        assert_rate_near(
            &what,
            hits,
            trials,
            math::bloom_fpr(shape.bits, n, shape.probes),
            0.03,
        );
        assert_rate_near(
            &format!("{what} fill^k"),
            hits,
            trials,
            f.estimated_fpr(),
            0.01,
        );

        // Insert n more, remove them again: back to the same FPR.
        let extra = hashes(100 + i as u64, n as usize);
        extra.iter().for_each(|&h| f.insert(h));
        let doubled = count_hits(&probes, |h| f.may_contain(h));
        assert_rate_near(
            &format!("{what} 2n"),
            doubled,
            trials,
            math::bloom_fpr(shape.bits, 2 * n, shape.probes),
            0.03,
        );
        extra.iter().for_each(|&h| f.remove(h).unwrap());
        let after = count_hits(&probes, |h| f.may_contain(h));
        assert_eq!(after, hits, "{what}: removals restore the FPR exactly");
    }
}

#[test]
fn count_estimate_follows_inserts_and_removes() {
    let members = hashes(5, 20_000);
    let mut f = filled(BloomShape::for_fpr(20_000, 0.01), &members);
    let est = f.estimated_count().unwrap();
    assert!((est - 20_000.0).abs() / 20_000.0 < 0.02, "{est}");
    members[..15_000].iter().for_each(|&h| f.remove(h).unwrap());
    let est = f.estimated_count().unwrap();
    assert!((est - 5_000.0).abs() / 5_000.0 < 0.03, "{est}");
}

/// Golden encoding: pins the envelope, the body layout, the nibble packing,
/// the probe sequence and the hash.
#[test]
fn golden_encoding() {
    let mut f = CountingBloom::new(BloomShape {
        bits: 16,
        probes: 2,
    })
    .unwrap();
    f.insert(KeyHash::of(b"sift"));
    f.insert(KeyHash::of(b"sift"));
    f.insert(KeyHash::of(b"a"));
    let hex: String = f.encode().iter().map(|b| format!("{b:02x}")).collect();
    // "SFLT", v1, kind 4, hash 1, flags 0, body 20 bytes: k = 2, 16
    // counters, one word. Counter = top 4 bits of g_0 = lo, g_1 = lo + hi:
    // "sift" (lo 0x89be.., lo + hi 0xf35a..) hits counters 8 and 15 twice,
    // "a" (lo 0xe6c6.., lo + hi 0x9035.. mod 2^64) hits 14 and 9 once;
    // counter i is bits 4i..4i+3, so the word is 0x2100_0012_0000_0000.
    // Then the xxh3_64 checksum.
    assert_eq!(
        hex,
        "53464c5401040100140000000200000010000000000000000000000012000021\
         0dc0e70c17e8e5d1"
    );
}

fn forged(probes: u32, counters: u64, words: &[u64]) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(probes).u64(counters).words(words);
    codec::seal(FilterKind::CountingBloom, w)
}

#[test]
fn decode_reports_the_right_error() {
    let f = CountingBloom::new(BloomShape {
        bits: 100,
        probes: 7,
    })
    .unwrap();
    let bytes = f.encode();
    assert_eq!(CountingBloom::decode(&bytes).unwrap(), f);
    assert_eq!(CountingBloom::decode(&forged(7, 100, &[0; 7])).unwrap(), f);
    assert!(matches!(
        CountingBloom::decode(&bytes[..5]),
        Err(DecodeError::Truncated { .. })
    ));
    let mut wrong = bytes.clone();
    wrong[5] = FilterKind::StandardBloom as u8;
    assert!(matches!(
        CountingBloom::decode(&wrong),
        Err(DecodeError::WrongKind { .. })
    ));

    let invalid = |b: &[u8]| match CountingBloom::decode(b) {
        Err(DecodeError::Invalid(why)) => why,
        other => panic!("expected Invalid, got {other:?}"),
    };
    assert_eq!(
        invalid(&forged(0, 100, &[0; 7])),
        "probe count out of range"
    );
    assert_eq!(
        invalid(&forged(65, 100, &[0; 7])),
        "probe count out of range"
    );
    assert_eq!(invalid(&forged(7, 0, &[])), "no counters");
    // 100 counters use 4 nibbles of the 7th word; the 5th is set.
    assert_eq!(
        invalid(&forged(7, 100, &[0, 0, 0, 0, 0, 0, 1 << 16])),
        "counters set past the end of the array"
    );
    assert!(CountingBloom::decode(&forged(7, 100, &[0, 0, 0, 0, 0, 0, 1 << 15])).is_ok());
    assert!(matches!(
        CountingBloom::decode(&forged(7, 100, &[0; 6])),
        Err(DecodeError::Truncated { .. })
    ));
    assert_eq!(
        CountingBloom::decode(&forged(7, 100, &[0; 8])),
        Err(DecodeError::TrailingBytes(8))
    );
    assert!(CountingBloom::decode(&forged(7, u64::MAX, &[0; 7])).is_err());
}

#[test]
fn invalid_parameters_are_rejected() {
    let rejected = |r: Result<CountingBloom, Error>| matches!(r, Err(Error::InvalidParameter(_)));
    assert!(rejected(CountingBloom::new(BloomShape {
        bits: 0,
        probes: 7
    })));
    assert!(rejected(CountingBloom::new(BloomShape {
        bits: 64,
        probes: 0
    })));
    assert!(rejected(CountingBloom::new(BloomShape {
        bits: 64,
        probes: 65
    })));
    assert!(rejected(CountingBloom::new(BloomShape {
        bits: u64::MAX,
        probes: 7
    })));
    assert!(rejected(CountingBloom::new(BloomShape {
        bits: 1 << 62,
        probes: 7
    })));
    assert!(rejected(CountingBloom::with_fpr(10, 0.0)));
    assert!(rejected(CountingBloom::with_fpr(10, 1.0)));
    assert!(rejected(CountingBloom::with_fpr(10, f64::NAN)));
    let f = CountingBloom::with_fpr(10, 0.01).unwrap();
    assert_eq!(f.shape(), BloomShape::for_fpr(10, 0.01));
}
