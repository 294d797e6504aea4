//! XOR and binary fuse filters, 8- and 16-bit: no false negatives (with
//! duplicates, at every small size), FPR `2^-bits` against the binomial
//! spread, bits/key against `math`, golden encodings, and decoding that
//! rejects every damaged or forged body or answers like an encoded filter.
mod common;

use common::*;
use proptest::prelude::*;
use sift_filter::codec::{self, FilterKind, Writer};
use sift_filter::{
    AnyFilter, BinaryFuse8, BinaryFuse16, BinaryFuseBuilder, BlockedBloom, DecodeError, Filter,
    FilterBuilder, Fingerprint, KeyHash, Xor8, Xor16, XorBuilder, XorFamily, XorOrBloom, math,
    mix64,
};

/// Builds `T` from `members` through its builder's `finish`, failing the
/// test on a fallback to Bloom.
#[expect(clippy::panic, reason = "test helper: a fallback here fails the test")]
fn built<T: XorFamily>(members: &[KeyHash]) -> T {
    let mut b = sift_filter::XorFamilyBuilder::<T>::new();
    members.iter().for_each(|&h| b.add(h));
    match b.finish() {
        XorOrBloom::Xor(f) => f,
        XorOrBloom::Bloom(_) => panic!("fell back to Bloom"),
    }
}

/// `members` with each key repeated `copies` times, rotated by `shift`.
fn with_duplicates(members: &[KeyHash], copies: usize, shift: usize) -> Vec<KeyHash> {
    let mut all: Vec<KeyHash> = (0..copies).flat_map(|_| members.iter().copied()).collect();
    if !all.is_empty() {
        let len = all.len();
        all.rotate_left(shift % len);
    }
    all
}

/// Every member answers `true`, the count is the distinct count, and the
/// encoding decodes (alone and through `AnyFilter`) to a filter that
/// answers every probe the same.
fn check_members<T: XorFamily + PartialEq + std::fmt::Debug>(
    members: &[KeyHash],
    all: &[KeyHash],
    probes: &[KeyHash],
) -> Result<(), TestCaseError> {
    let f: T = built(all);
    for &h in members {
        prop_assert!(f.may_contain(h));
    }
    prop_assert_eq!(f.estimated_count(), Some(members.len() as f64));
    let bytes = f.encode();
    let back = T::decode(&bytes).map_err(|e| TestCaseError::fail(format!("{e}")))?;
    prop_assert_eq!(&back, &f);
    let any = AnyFilter::decode(&bytes).map_err(|e| TestCaseError::fail(format!("{e}")))?;
    prop_assert_eq!(any.kind(), T::KIND);
    for &h in probes {
        prop_assert_eq!(any.may_contain(h), f.may_contain(h));
    }
    prop_assert_eq!(any.encode(), bytes);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn no_false_negatives(n in 0usize..4_000, seed: u64) {
        let members = hashes(seed, n);
        let probes = hashes(seed ^ 0xdead, 200);
        check_members::<BinaryFuse8>(&members, &members, &probes)?;
        check_members::<BinaryFuse16>(&members, &members, &probes)?;
        check_members::<Xor8>(&members, &members, &probes)?;
        check_members::<Xor16>(&members, &members, &probes)?;
    }

    /// Every key added several times, in any order: counted once, found.
    #[test]
    fn duplicates_are_harmless(n in 1usize..1_500, copies in 2usize..4, seed: u64) {
        let members = hashes(seed, n);
        let all = with_duplicates(&members, copies, seed as usize);
        let probes = hashes(seed ^ 0xbeef, 100);
        check_members::<BinaryFuse8>(&members, &all, &probes)?;
        check_members::<BinaryFuse16>(&members, &all, &probes)?;
        check_members::<Xor8>(&members, &all, &probes)?;
        check_members::<Xor16>(&members, &all, &probes)?;
    }

    #[test]
    fn damaged_encodings_never_decode(n in 0usize..300, seed: u64) {
        let members = hashes(seed, n);
        for bytes in [
            BinaryFuse8::from_hashes(&members).unwrap().encode(),
            BinaryFuse16::from_hashes(&members).unwrap().encode(),
            Xor8::from_hashes(&members).unwrap().encode(),
            Xor16::from_hashes(&members).unwrap().encode(),
        ] {
            for damaged in damaged_variants(&bytes, 64) {
                // Byte flips are caught by the checksum; cuts and growth by lengths.
                prop_assert!(BinaryFuse8::decode(&damaged).is_err());
                prop_assert!(BinaryFuse16::decode(&damaged).is_err());
                prop_assert!(Xor8::decode(&damaged).is_err());
                prop_assert!(Xor16::decode(&damaged).is_err());
                prop_assert!(AnyFilter::decode(&damaged).is_err());
            }
        }
    }

    #[test]
    fn random_bytes_never_decode(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        prop_assert!(BinaryFuse8::decode(&bytes).is_err());
        prop_assert!(Xor16::decode(&bytes).is_err());
        prop_assert!(AnyFilter::decode(&bytes).is_err());
    }

    /// Bodies with a valid checksum but arbitrary fields: an error, or a
    /// filter that answers without panicking, reports sane statistics and
    /// re-encodes to the same bytes.
    #[test]
    fn forged_fuse_bodies_error_or_answer(
        width in prop_oneof![3 => prop_oneof![Just(8u8), Just(16)], 1 => any::<u8>()],
        seed in prop_oneof![3 => 0u32..40, 1 => any::<u32>()],
        keys in prop_oneof![3 => 0u64..200, 1 => any::<u64>()],
        log2_len in prop_oneof![3 => 0u8..6, 1 => any::<u8>()],
        segments in prop_oneof![3 => 0u64..6, 1 => any::<u64>()],
        extra in prop_oneof![3 => Just(0i64), 1 => -3i64..=3],
        fill: u64,
    ) {
        let slots = if segments == 0 || log2_len > 6 || segments > 6 { 0 } else { (segments + 2) << log2_len };
        let len = (slots as i64 * i64::from(width / 8).max(1) + extra).max(0) as usize;
        let payload: Vec<u8> = (0..len as u64).map(|i| mix64(fill ^ i) as u8).collect();
        let mut w = Writer::new();
        w.u8(width).u32(seed).u64(keys).u8(log2_len).u64(segments).bytes(&payload);
        let bytes = codec::seal(FilterKind::BinaryFuse, w);
        let decoded: Vec<Box<dyn Filter>> = [
            BinaryFuse8::decode(&bytes).ok().map(|f| Box::new(f) as Box<dyn Filter>),
            BinaryFuse16::decode(&bytes).ok().map(|f| Box::new(f) as Box<dyn Filter>),
            AnyFilter::decode(&bytes).ok().map(|f| Box::new(f) as Box<dyn Filter>),
        ].into_iter().flatten().collect();
        prop_assert!(decoded.is_empty() || decoded.len() == 2);
        for f in decoded {
            prop_assert!(seed < 32 && (width == 8 || width == 16) && keys <= slots);
            prop_assert_eq!(f.size_bytes(), len);
            for h in hashes(fill, 100) {
                let _ = f.may_contain(h);
            }
            prop_assert!((0.0..=1.0).contains(&f.estimated_fpr()));
            prop_assert!((0.0..=1.0).contains(&f.fill_ratio()));
            prop_assert_eq!(f.encode(), bytes.clone());
        }
    }

    #[test]
    fn forged_xor_bodies_error_or_answer(
        width in prop_oneof![3 => prop_oneof![Just(8u8), Just(16)], 1 => any::<u8>()],
        seed in prop_oneof![3 => 0u32..40, 1 => any::<u32>()],
        keys in prop_oneof![3 => 0u64..100, 1 => any::<u64>()],
        block_len in prop_oneof![3 => 0u64..40, 1 => any::<u64>()],
        extra in prop_oneof![3 => Just(0i64), 1 => -3i64..=3],
        fill: u64,
    ) {
        let slots = if block_len < 40 { 3 * block_len } else { 0 };
        let len = (slots as i64 * i64::from(width / 8).max(1) + extra).max(0) as usize;
        let payload: Vec<u8> = (0..len as u64).map(|i| mix64(fill ^ i) as u8).collect();
        let mut w = Writer::new();
        w.u8(width).u32(seed).u64(keys).u64(block_len).bytes(&payload);
        let bytes = codec::seal(FilterKind::Xor, w);
        let decoded: Vec<Box<dyn Filter>> = [
            Xor8::decode(&bytes).ok().map(|f| Box::new(f) as Box<dyn Filter>),
            Xor16::decode(&bytes).ok().map(|f| Box::new(f) as Box<dyn Filter>),
            AnyFilter::decode(&bytes).ok().map(|f| Box::new(f) as Box<dyn Filter>),
        ].into_iter().flatten().collect();
        prop_assert!(decoded.is_empty() || decoded.len() == 2);
        for f in decoded {
            prop_assert!(seed < 32 && (width == 8 || width == 16) && keys <= slots);
            for h in hashes(fill, 100) {
                let _ = f.may_contain(h);
            }
            prop_assert!((0.0..=1.0).contains(&f.fill_ratio()));
            prop_assert_eq!(f.encode(), bytes.clone());
        }
    }
}

#[test]
fn every_small_size_builds_and_holds_its_keys() {
    for n in 0..=64 {
        for seed in 0..8 {
            let members = hashes(1_000 * n as u64 + seed, n);
            let f8 = BinaryFuse8::from_hashes(&members).unwrap();
            let f16 = BinaryFuse16::from_hashes(&members).unwrap();
            let x8 = Xor8::from_hashes(&members).unwrap();
            let x16 = Xor16::from_hashes(&members).unwrap();
            assert!(members.iter().all(|&h| f8.may_contain(h)
                && f16.may_contain(h)
                && x8.may_contain(h)
                && x16.may_contain(h)));
            assert_eq!(
                f8.size_bytes() as u64,
                math::binary_fuse_array_length(n as u64)
            );
            assert_eq!(
                x16.size_bytes() as u64,
                2 * math::xor_array_length(n as u64)
            );
        }
    }
}

#[test]
fn empty_sets_reject_everything() {
    let f = BinaryFuse8::from_hashes(&[]).unwrap();
    let x = Xor16::from_hashes(&[]).unwrap();
    let probes = hashes(1, 10_000);
    assert_eq!(count_hits(&probes, |h| f.may_contain(h)), 0);
    assert_eq!(count_hits(&probes, |h| x.may_contain(h)), 0);
    for g in [&f as &dyn Filter, &x] {
        assert_eq!(
            (g.size_bytes(), g.estimated_fpr(), g.fill_ratio()),
            (0, 0.0, 0.0)
        );
        assert_eq!(g.estimated_count(), Some(0.0));
    }
    assert_eq!(BinaryFuse8::decode(&f.encode()).unwrap(), f);
    assert_eq!(Xor16::decode(&x.encode()).unwrap(), x);
    assert_eq!((f.segment_count(), f.segment_length()), (0, 1));
    assert_eq!(x.block_length(), 0);
}

/// Measured FPR against `2^-bits`, 2M non-member probes per filter. A
/// non-member's fingerprint is uniform and independent of its slots, so
/// each probe passes with exactly that probability: no model error.
#[test]
fn fpr_is_two_to_the_minus_bits() {
    let probes = hashes(0xfeed, 2_000_000);
    let trials = probes.len() as u64;
    for (i, &n) in [1_000usize, 30_000, 200_000].iter().enumerate() {
        let members = hashes(i as u64, n);
        let filters: [(&str, Box<dyn Filter>); 4] = [
            (
                "fuse8",
                Box::new(BinaryFuse8::from_hashes(&members).unwrap()),
            ),
            (
                "fuse16",
                Box::new(BinaryFuse16::from_hashes(&members).unwrap()),
            ),
            ("xor8", Box::new(Xor8::from_hashes(&members).unwrap())),
            ("xor16", Box::new(Xor16::from_hashes(&members).unwrap())),
        ];
        for (name, f) in filters {
            let hits = count_hits(&probes, |h| f.may_contain(h));
            assert_rate_near(
                &format!("{name} n={n}"),
                hits,
                trials,
                f.estimated_fpr(),
                0.0,
            );
        }
    }
}

/// The target: BinaryFuse8 of a million keys at ≤ 9.1 bits/key and ≤ 0.4%
/// measured FPR; BinaryFuse16 at twice the bits and `2^-16`.
#[test]
fn binary_fuse_of_a_million_keys_meets_the_target() {
    let n = 1_000_000u64;
    let members = hashes(42, n as usize);
    let probes = hashes(43, 2_000_000);
    let f8 = BinaryFuse8::from_hashes(&members).unwrap();
    let bits = f8.size_bytes() as f64 * 8.0 / n as f64;
    assert_eq!(bits, math::binary_fuse_bits_per_key(n, 8));
    assert!(bits <= 9.1, "{bits}");
    assert_eq!(f8.segment_length(), math::binary_fuse_segment_length(n));
    assert_eq!(f8.segment_count(), math::binary_fuse_segment_count(n));
    assert!(members.iter().all(|&h| f8.may_contain(h)));
    let hits = count_hits(&probes, |h| f8.may_contain(h));
    assert_rate_near("fuse8 1M", hits, probes.len() as u64, 1.0 / 256.0, 0.0);
    assert_rate_at_most("fuse8 1M", hits, probes.len() as u64, 0.004);

    let f16 = BinaryFuse16::from_hashes(&members).unwrap();
    assert_eq!(f16.size_bytes(), 2 * f8.size_bytes());
    let hits = count_hits(&probes, |h| f16.may_contain(h));
    assert_rate_near("fuse16 1M", hits, probes.len() as u64, 1.0 / 65_536.0, 0.0);

    let x8 = Xor8::from_hashes(&members).unwrap();
    assert_eq!(
        x8.size_bytes() as f64 * 8.0 / n as f64,
        math::xor_bits_per_key(n, 8)
    );
}

#[test]
fn builders_count_what_was_added_and_fall_back_only_on_failure() {
    let mut b = BinaryFuseBuilder::<u8>::new();
    hashes(1, 7).into_iter().for_each(|h| b.add(h));
    b.add(key_hash(1, 0));
    assert_eq!((b.len(), b.is_empty()), (8, false));
    let f = b.finish();
    assert!(matches!(&f, XorOrBloom::Xor(x) if x.num_keys() == 7));
    assert_eq!(XorOrBloom::<BinaryFuse8>::decode(&f.encode()).unwrap(), f);

    let mut b = XorBuilder::<u16>::with_capacity(10);
    assert!(b.is_empty());
    let members = hashes(2, 10);
    members.iter().for_each(|&h| b.add(h));
    let x = b.build().unwrap();
    assert!(members.iter().all(|&h| x.may_contain(h)));

    // The fallback decodes as the Bloom variant; other kinds are refused.
    let bloom = BlockedBloom::from_hashes(&members, 12.0).unwrap();
    assert_eq!(
        XorOrBloom::<Xor16>::decode(&bloom.encode()).unwrap(),
        XorOrBloom::Bloom(bloom)
    );
    assert_eq!(
        XorOrBloom::<Xor16>::decode(&x.encode()).unwrap(),
        XorOrBloom::Xor(x.clone())
    );
    assert_eq!(
        XorOrBloom::<BinaryFuse16>::decode(&x.encode()),
        Err(DecodeError::WrongKind {
            expected: FilterKind::BinaryFuse,
            found: FilterKind::Xor
        })
    );
}

/// The documented placement (docs/format.md, kinds 10 and 11), computed
/// here from the text rather than by the library: seed `s`,
/// `x = mix64(lo ^ mix64((s + 1) · φ)) ^ hi`, fingerprint = low bits of `hi`.
fn place(seed: u32, h: KeyHash) -> u64 {
    let phi = 0x9e37_79b9_7f4a_7c15u64;
    mix64(h.lo() ^ mix64(u64::from(seed + 1).wrapping_mul(phi))) ^ h.hi()
}

fn fastrange(x: u64, n: u64) -> u64 {
    ((u128::from(x) * u128::from(n)) >> 64) as u64
}

fn fuse_slots(x: u64, log2_len: u32, segments: u64) -> [usize; 3] {
    let len = 1u64 << log2_len;
    let h0 = fastrange(x, segments * len);
    [
        h0,
        (h0 + len) ^ ((x >> 18) & (len - 1)),
        (h0 + 2 * len) ^ (x & (len - 1)),
    ]
    .map(|p| p as usize)
}

fn xor_slots(x: u64, block_len: u64) -> [usize; 3] {
    [0u32, 1, 2]
        .map(|i| (u64::from(i) * block_len + fastrange(x.rotate_left(21 * i), block_len)) as usize)
}

/// The body after the envelope, checked against its header fields.
#[expect(
    clippy::unwrap_used,
    reason = "test helper; reads encodings the library made"
)]
fn body(bytes: &[u8], kind: FilterKind) -> Vec<u8> {
    let mut r = codec::open(bytes, kind).unwrap();
    r.bytes(r.remaining()).unwrap().to_vec()
}

fn fingerprints<F: Fingerprint>(payload: &[u8]) -> Vec<u64> {
    match F::BITS {
        8 => payload.iter().map(|&b| u64::from(b)).collect(),
        _ => payload
            .chunks_exact(2)
            .map(|c| u64::from(u16::from_le_bytes([c[0], c[1]])))
            .collect(),
    }
}

/// Golden encodings: pin the envelope, the body layout, the placement of
/// keys and the assignment. Three keys ("sift", "key", "fuse"); the body
/// fields are read back and each key's three slots, computed from the
/// documented formulas, XOR to its documented fingerprint.
#[test]
fn golden_encodings() {
    let keys = [b"sift".as_slice(), b"key", b"fuse"].map(KeyHash::of);
    let f8 = BinaryFuse8::from_hashes(&keys).unwrap();
    let f16 = BinaryFuse16::from_hashes(&keys).unwrap();
    let x8 = Xor8::from_hashes(&keys).unwrap();
    let x16 = Xor16::from_hashes(&keys).unwrap();

    // Kind 11: width, seed, 3 keys, log2 L = 3, 1 segment, (1 + 2)·8 slots.
    for (bytes, bits) in [(f8.encode(), 8u32), (f16.encode(), 16)] {
        let b = body(&bytes, FilterKind::BinaryFuse);
        let seed = u32::from_le_bytes(b[1..5].try_into().unwrap());
        assert_eq!((b[0] as u32, seed), (bits, 0));
        assert_eq!(&b[5..13], &3u64.to_le_bytes());
        assert_eq!(b[13], 3);
        assert_eq!(&b[14..22], &1u64.to_le_bytes());
        let slots = match bits {
            8 => fingerprints::<u8>(&b[22..]),
            _ => fingerprints::<u16>(&b[22..]),
        };
        assert_eq!(slots.len(), 24);
        for &k in &keys {
            let x = place(seed, k);
            let [a, c, d] = fuse_slots(x, 3, 1);
            let mask = (1u64 << bits) - 1;
            assert_eq!(slots[a] ^ slots[c] ^ slots[d], k.hi() & mask);
        }
    }
    // Kind 10: width, seed, 3 keys, block length 12 (36 slots).
    for (bytes, bits) in [(x8.encode(), 8u32), (x16.encode(), 16)] {
        let b = body(&bytes, FilterKind::Xor);
        let seed = u32::from_le_bytes(b[1..5].try_into().unwrap());
        assert_eq!((b[0] as u32, seed), (bits, 0));
        assert_eq!(&b[5..13], &3u64.to_le_bytes());
        assert_eq!(&b[13..21], &12u64.to_le_bytes());
        let slots = match bits {
            8 => fingerprints::<u8>(&b[21..]),
            _ => fingerprints::<u16>(&b[21..]),
        };
        assert_eq!(slots.len(), 36);
        for &k in &keys {
            let [a, c, d] = xor_slots(place(seed, k), 12);
            let mask = (1u64 << bits) - 1;
            assert_eq!(slots[a] ^ slots[c] ^ slots[d], k.hi() & mask);
        }
    }

    let hex = |bytes: Vec<u8>| -> String { bytes.iter().map(|b| format!("{b:02x}")).collect() };
    // "SFLT", v1, kind 11 (0x0b), hash 1, flags 0, body length; then the
    // body read back above (seed 0 for all four here); then the checksum.
    assert_eq!(hex(f8.encode()), GOLDEN_FUSE8);
    assert_eq!(hex(f16.encode()), GOLDEN_FUSE16);
    assert_eq!(hex(x8.encode()), GOLDEN_XOR8);
    assert_eq!(hex(x16.encode()), GOLDEN_XOR16);
}

const GOLDEN_FUSE8: &str = "53464c54010b01002e000000080000000003000000000000000301000000000000000000f8000078\
                            760000000000000000000000000000000000e186eb33e6e60884";
const GOLDEN_FUSE16: &str = "53464c54010b0100460000001000000000030000000000000003010000000000000000000000f84c\
                             0000000078ad769a0000000000000000000000000000000000000000000000000000000000000000\
                             000004778c468aaa240c";
const GOLDEN_XOR8: &str = "53464c54010a010039000000080000000003000000000000000c0000000000000000000000f80000\
                           0078007600000000000000000000000000000000000000000000000000ad8eba9ea79c3bfc";
const GOLDEN_XOR16: &str = "53464c54010a01005d000000100000000003000000000000000c0000000000000000000000000000\
                            00f84c00000000000078ad0000769a00000000000000000000000000000000000000000000000000\
                            000000000000000000000000000000000000000000000000005466dccc745826c3";

/// A sealed kind-11 encoding with any body fields.
fn forged_fuse(
    width: u8,
    seed: u32,
    keys: u64,
    log2_len: u8,
    segments: u64,
    payload: &[u8],
) -> Vec<u8> {
    let mut w = Writer::new();
    w.u8(width)
        .u32(seed)
        .u64(keys)
        .u8(log2_len)
        .u64(segments)
        .bytes(payload);
    codec::seal(FilterKind::BinaryFuse, w)
}

/// A sealed kind-10 encoding with any body fields.
fn forged_xor(width: u8, seed: u32, keys: u64, block_len: u64, payload: &[u8]) -> Vec<u8> {
    let mut w = Writer::new();
    w.u8(width)
        .u32(seed)
        .u64(keys)
        .u64(block_len)
        .bytes(payload);
    codec::seal(FilterKind::Xor, w)
}

/// Every way a body can be invalid has its error.
#[test]
fn decode_reports_the_right_error() {
    let invalid = |r: Result<(), DecodeError>| match r {
        Err(DecodeError::Invalid(why)) => why,
        other => panic!("{other:?}"),
    };
    let fuse8 = |b: &[u8]| BinaryFuse8::decode(b).map(|_| ());
    let p24 = [0u8; 24];
    assert!(fuse8(&forged_fuse(8, 31, 3, 3, 1, &p24)).is_ok());
    assert_eq!(
        invalid(fuse8(&forged_fuse(16, 0, 3, 3, 1, &p24))),
        "fingerprint width differs from the decoder's"
    );
    assert_eq!(
        invalid(AnyFilter::decode(&forged_fuse(9, 0, 3, 3, 1, &p24)).map(|_| ())),
        "fingerprint width is not 8 or 16"
    );
    assert_eq!(
        invalid(fuse8(&forged_fuse(8, 32, 3, 3, 1, &p24))),
        "XOR-family seed out of range"
    );
    assert_eq!(
        invalid(fuse8(&forged_fuse(8, 0, 25, 3, 1, &p24))),
        "XOR-family key count disagrees with the slots"
    );
    assert_eq!(
        invalid(fuse8(&forged_fuse(8, 0, 0, 3, 1, &p24))),
        "XOR-family key count disagrees with the slots"
    );
    assert_eq!(
        invalid(fuse8(&forged_fuse(8, 0, 1, 0, 0, &[]))),
        "XOR-family key count disagrees with the slots"
    );
    for (log2, segments) in [(19, 1), (2, 0), (18, u64::MAX), (18, 1 << 14)] {
        assert_eq!(
            invalid(fuse8(&forged_fuse(8, 0, 3, log2, segments, &p24))),
            "binary fuse segment length or count out of range"
        );
    }
    assert!(matches!(
        fuse8(&forged_fuse(8, 0, 3, 3, 1, &p24[1..])),
        Err(DecodeError::Truncated { .. })
    ));
    assert_eq!(
        fuse8(&forged_fuse(8, 0, 3, 3, 1, &[0; 25])),
        Err(DecodeError::TrailingBytes(1))
    );
    // A forged huge layout is refused by length before any allocation.
    assert!(matches!(
        fuse8(&forged_fuse(8, 0, 3, 18, (1 << 14) - 3, &p24)),
        Err(DecodeError::Truncated { .. })
    ));

    let xor16 = |b: &[u8]| Xor16::decode(b).map(|_| ());
    let p72 = [0u8; 72];
    assert!(xor16(&forged_xor(16, 0, 36, 12, &p72)).is_ok());
    assert_eq!(
        invalid(xor16(&forged_xor(8, 0, 3, 12, &p72))),
        "fingerprint width differs from the decoder's"
    );
    assert_eq!(
        invalid(xor16(&forged_xor(16, 0, 37, 12, &p72))),
        "XOR-family key count disagrees with the slots"
    );
    assert_eq!(
        invalid(xor16(&forged_xor(16, 0, 3, u64::MAX / 3, &p72))),
        "XOR filter block length too large"
    );
    assert!(matches!(
        xor16(&forged_xor(16, 0, 3, 13, &p72)),
        Err(DecodeError::Truncated { .. })
    ));
    assert!(matches!(
        Xor8::decode(&BinaryFuse8::from_hashes(&hashes(1, 5)).unwrap().encode()),
        Err(DecodeError::WrongKind { .. })
    ));
}
