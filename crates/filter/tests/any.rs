//! `AnyFilter`: every kind decodes through one entry point and answers as
//! the filter that was encoded.
mod common;

use common::*;
use sift_filter::{
    AnyFilter, AtomicBloom, BinaryFuse8, BinaryFuse16, BlockedBloom, BloomShape, CountingBloom,
    CuckooFilter, DecodeError, Filter, FilterBuilder, FilterKind, PartitionedBloom, RibbonBuilder,
    ScalableBloom, SplitBlockBloom, StandardBloom, StaticFilter, Xor8, Xor16,
};

/// One filter of each kind holding `members`.
#[expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helper; every parameter is valid"
)]
fn one_of_each(members: &[sift_filter::KeyHash]) -> Vec<(FilterKind, Box<dyn Filter>)> {
    let n = members.len() as u64;
    let shape = BloomShape::for_fpr(n, 0.01);
    let mut standard = StandardBloom::new(shape).unwrap();
    let mut counting = CountingBloom::new(shape).unwrap();
    let mut cuckoo = CuckooFilter::new(members.len(), 12).unwrap();
    let mut scalable = ScalableBloom::new(n / 4, 0.01).unwrap();
    let mut partitioned = PartitionedBloom::new(shape).unwrap();
    let atomic = AtomicBloom::new(shape).unwrap();
    for &h in members {
        standard.insert(h);
        counting.insert(h);
        cuckoo.insert(h).unwrap();
        scalable.insert(h);
        partitioned.insert(h);
        atomic.insert(h);
    }
    vec![
        (FilterKind::StandardBloom, Box::new(standard)),
        (
            FilterKind::BlockedBloom,
            Box::new(BlockedBloom::from_hashes(members, 10.0).unwrap()),
        ),
        (FilterKind::Ribbon, {
            let mut ribbon = RibbonBuilder::new(7.0).unwrap();
            members.iter().for_each(|&h| ribbon.add(h));
            let StaticFilter::Ribbon(ribbon) = ribbon.finish() else {
                panic!("2,000 keys at 7 bits/key build a Ribbon");
            };
            Box::new(ribbon)
        }),
        (FilterKind::CountingBloom, Box::new(counting)),
        (FilterKind::Cuckoo, Box::new(cuckoo)),
        (FilterKind::ScalableBloom, Box::new(scalable)),
        (FilterKind::PartitionedBloom, Box::new(partitioned)),
        (FilterKind::AtomicBloom, Box::new(atomic)),
        (
            FilterKind::Xor,
            Box::new(Xor8::from_hashes(members).unwrap()),
        ),
        (
            FilterKind::Xor,
            Box::new(Xor16::from_hashes(members).unwrap()),
        ),
        (
            FilterKind::BinaryFuse,
            Box::new(BinaryFuse8::from_hashes(members).unwrap()),
        ),
        (
            FilterKind::BinaryFuse,
            Box::new(BinaryFuse16::from_hashes(members).unwrap()),
        ),
        (
            FilterKind::SplitBlockBloom,
            Box::new(SplitBlockBloom::from_hashes(members, 10.0).unwrap()),
        ),
    ]
}

#[test]
fn every_kind_decodes_and_answers_identically() {
    let members = hashes(1, 2_000);
    let others = hashes(2, 20_000);
    for (kind, filter) in one_of_each(&members) {
        let bytes = filter.encode();
        let any = AnyFilter::decode(&bytes).unwrap();
        assert_eq!(any.kind(), kind);
        assert_eq!(any.encode(), bytes, "{kind:?} re-encodes differently");
        assert!(members.iter().all(|&h| any.may_contain(h)), "{kind:?}");
        for &h in &others {
            assert_eq!(any.may_contain(h), filter.may_contain(h), "{kind:?}");
        }
        assert_eq!(any.size_bytes(), filter.size_bytes());
        assert_eq!(any.estimated_count(), filter.estimated_count());
    }
}

#[test]
fn damaged_encodings_of_every_kind_are_errors() {
    for (kind, filter) in one_of_each(&hashes(3, 2_000)) {
        for bytes in damaged_variants(&filter.encode(), 48) {
            assert!(AnyFilter::decode(&bytes).is_err(), "{kind:?}");
        }
    }
}

#[test]
fn unknown_kinds_are_reported() {
    let mut bytes = StandardBloom::new(BloomShape {
        bits: 64,
        probes: 1,
    })
    .unwrap()
    .encode();
    bytes[5] = 99;
    assert_eq!(
        AnyFilter::decode(&bytes).unwrap_err(),
        DecodeError::UnknownKind(99)
    );
    assert_eq!(
        AnyFilter::decode(b"nope").unwrap_err(),
        DecodeError::BadMagic
    );
}
