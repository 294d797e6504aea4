//! Concurrent (atomic) Bloom: inserts from many threads while others query,
//! bit-for-bit agreement with the standard filter, FPR, encoding.
mod common;

use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use proptest::prelude::*;
use sift_filter::codec::{self, FilterKind, Writer};
use sift_filter::{
    AtomicBloom, BloomShape, DecodeError, Error, Filter, KeyHash, StandardBloom, math,
};

/// The standard filter fed `members` one by one.
fn sequential(shape: BloomShape, members: &[KeyHash]) -> Option<StandardBloom> {
    let mut f = StandardBloom::new(shape).ok()?;
    members.iter().for_each(|&h| f.insert(h));
    Some(f)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn no_false_negatives_and_same_bits_as_standard(
        n in 0usize..5_000,
        bits_per_key in 1.0f64..24.0,
        seed: u64,
    ) {
        let members = hashes(seed, n);
        let shape = BloomShape::for_bits_per_key(n as u64, bits_per_key);
        let f = AtomicBloom::new(shape).unwrap();
        members.iter().for_each(|&h| f.insert(h));
        for &h in &members {
            prop_assert!(f.may_contain(h));
        }
        prop_assert_eq!(f.to_standard(), sequential(shape, &members).unwrap());
    }

    #[test]
    fn damaged_encodings_error_or_decode_but_never_panic(n in 0usize..300, seed: u64) {
        let f = AtomicBloom::with_fpr(n as u64, 0.01).unwrap();
        hashes(seed, n).into_iter().for_each(|h| f.insert(h));
        let bytes = f.encode();
        prop_assert_eq!(AtomicBloom::decode(&bytes).unwrap().to_standard(), f.to_standard());
        for damaged in damaged_variants(&bytes, 64) {
            // Any byte flip is caught by the checksum; truncations by lengths.
            prop_assert!(AtomicBloom::decode(&damaged).is_err());
        }
    }

    #[test]
    fn random_bytes_never_decode(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        prop_assert!(AtomicBloom::decode(&bytes).is_err());
    }
}

/// Four writers insert disjoint key sets while a reader queries, all
/// released at once by a barrier. The reader checks the documented
/// visibility: keys inserted before the threads started are always present,
/// and each writer publishes how many of its keys are in (a `Release` store
/// after the inserts, read with `Acquire`), the happens-before edge under
/// which they must be visible; each round checks what was published since
/// the last one, so rounds are short and interleave with the writers.
/// Afterwards the filter equals, bit for bit, a standard filter fed every
/// key sequentially.
#[test]
fn concurrent_inserts_lose_nothing_and_match_sequential_inserts() {
    const WRITERS: u64 = 4;
    const PER_WRITER: usize = 50_000;
    let shape = BloomShape::for_fpr(WRITERS * PER_WRITER as u64 + 10_000, 0.01);
    let f = AtomicBloom::new(shape).unwrap();
    let early = hashes(100, 10_000);
    early.iter().for_each(|&h| f.insert(h));
    let sets: Vec<Vec<KeyHash>> = (0..WRITERS).map(|w| hashes(w, PER_WRITER)).collect();
    let published: Vec<AtomicUsize> = (0..WRITERS).map(|_| AtomicUsize::new(0)).collect();

    let start = Barrier::new(WRITERS as usize + 1);
    std::thread::scope(|s| {
        for (set, done) in sets.iter().zip(&published) {
            let (f, start) = (&f, &start);
            s.spawn(move || {
                start.wait();
                for (i, chunk) in set.chunks(1_000).enumerate() {
                    chunk.iter().for_each(|&h| f.insert(h));
                    done.store((i + 1) * 1_000, Ordering::Release);
                }
            });
        }
        s.spawn(|| {
            start.wait();
            let mut checked = vec![0; sets.len()];
            for round in 0.. {
                let seen: Vec<usize> = published
                    .iter()
                    .map(|d| d.load(Ordering::Acquire))
                    .collect();
                let early_key = early[round % early.len()];
                assert!(f.may_contain(early_key), "round {round}: early key missing");
                for ((set, &upto), from) in sets.iter().zip(&seen).zip(&mut checked) {
                    let missing = set[*from..upto].iter().position(|&h| !f.may_contain(h));
                    assert_eq!(missing, None, "round {round}: published key missing");
                    *from = upto;
                }
                if seen.iter().all(|&upto| upto == PER_WRITER) {
                    break;
                }
            }
        });
    });

    let all: Vec<KeyHash> = early.iter().chain(sets.iter().flatten()).copied().collect();
    assert!(all.iter().all(|&h| f.may_contain(h)));
    assert_eq!(f.to_standard(), sequential(shape, &all).unwrap());
}

/// The bits are the standard filter's, so its formula applies unchanged,
/// with the same 3% model error (see tests/standard.rs).
#[test]
fn fpr_matches_the_standard_formula() {
    let probes = hashes(0xfeed, 400_000);
    let trials = probes.len() as u64;
    for (i, &(n, bits_per_key)) in [(10_000u64, 10.0), (100_000, 6.0)].iter().enumerate() {
        let shape = BloomShape::for_bits_per_key(n, bits_per_key);
        let f = AtomicBloom::new(shape).unwrap();
        hashes(i as u64, n as usize)
            .into_iter()
            .for_each(|h| f.insert(h));
        let hits = count_hits(&probes, |h| f.may_contain(h));
        let expected = math::bloom_fpr(shape.bits, n, shape.probes);
        assert_rate_near(
            &format!("n={n} bpk={bits_per_key}"),
            hits,
            trials,
            expected,
            0.03,
        );
        assert_rate_near("fill^k", hits, trials, f.estimated_fpr(), 0.01);
        let est = f.estimated_count().unwrap();
        assert!((est - n as f64).abs() / (n as f64) < 0.02, "{est}");
    }
}

/// Golden encoding: the standard filter's golden body (tests/standard.rs)
/// under kind 8. Same bits, same probes: the two convert losslessly.
#[test]
fn golden_encoding() {
    let f = AtomicBloom::new(BloomShape {
        bits: 64,
        probes: 3,
    })
    .unwrap();
    f.insert(KeyHash::of(b"sift"));
    let hex: String = f.encode().iter().map(|b| format!("{b:02x}")).collect();
    // "SFLT", v1, kind 8, hash 1, flags 0, body 20 bytes: k = 3, m = 64,
    // one word with bits 34, 60, 23 = top 6 bits of g_0, g_1, g_2 for
    // xxh3_128("sift"), then the xxh3_64 checksum.
    assert_eq!(
        hex,
        "53464c5401080100140000000300000040000000000000000000800004000010\
         2c185ff108a829f9"
    );
}

#[test]
fn decode_and_constructors_report_the_right_error() {
    let f = AtomicBloom::new(BloomShape {
        bits: 100,
        probes: 7,
    })
    .unwrap();
    let bytes = f.encode();
    assert_eq!(AtomicBloom::decode(&bytes).unwrap().shape(), f.shape());
    assert!(matches!(
        AtomicBloom::decode(&bytes[..5]),
        Err(DecodeError::Truncated { .. })
    ));
    // A standard Bloom encoding has the same body but not the same kind.
    let standard = f.to_standard().encode();
    assert!(matches!(
        AtomicBloom::decode(&standard),
        Err(DecodeError::WrongKind { .. })
    ));
    let forged = |probes: u32, bits: u64| {
        let mut w = Writer::new();
        w.u32(probes)
            .u64(bits)
            .words(&vec![0; bits.div_ceil(64) as usize]);
        AtomicBloom::decode(&codec::seal(FilterKind::AtomicBloom, w))
    };
    assert_eq!(
        forged(0, 64).err(),
        Some(DecodeError::Invalid("probe count out of range"))
    );
    assert_eq!(
        forged(65, 64).err(),
        Some(DecodeError::Invalid("probe count out of range"))
    );
    assert_eq!(
        forged(3, 0).err(),
        Some(DecodeError::Invalid("empty bit array"))
    );

    let invalid = |r: Result<AtomicBloom, Error>| matches!(r, Err(Error::InvalidParameter(_)));
    assert!(invalid(AtomicBloom::new(BloomShape { bits: 0, probes: 7 })));
    assert!(invalid(AtomicBloom::new(BloomShape {
        bits: 64,
        probes: 0
    })));
    assert!(invalid(AtomicBloom::new(BloomShape {
        bits: 64,
        probes: 65
    })));
    assert!(invalid(AtomicBloom::with_fpr(10, 0.0)));
    assert!(invalid(AtomicBloom::with_fpr(10, 1.0)));
}
