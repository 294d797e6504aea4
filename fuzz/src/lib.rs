//! What every decoder fuzz target checks.

use sift_filter::{DecodeError, Filter, KeyHash, RangeFilter};
use xxhash_rust::xxh3::xxh3_64;

/// Bytes of the envelope header before the body (see docs/format.md).
const HEADER_LEN: usize = 12;

/// Runs [`check_one`] on `data` as given, and again with its length field
/// and checksum repaired: random bytes almost never carry a valid checksum,
/// so without the repair the fuzzer would never reach the body decoders.
pub fn check_decoder<F: Filter>(data: &[u8], decode: impl Fn(&[u8]) -> Result<F, DecodeError>) {
    check_one(data, &decode);
    if let Some(resealed) = reseal(data) {
        check_one(&resealed, &decode);
    }
}

/// Decodes `data`; a successful decode must not panic at query time and
/// must re-encode to exactly the input (encodings are canonical, so a
/// decoder that accepts bytes no encoder writes is a bug).
fn check_one<F: Filter>(data: &[u8], decode: &impl Fn(&[u8]) -> Result<F, DecodeError>) {
    let Ok(filter) = decode(data) else { return };
    for i in 0..16u64 {
        let _ = filter.may_contain(KeyHash::of(&i.to_le_bytes()));
    }
    let _ = (
        filter.size_bytes(),
        filter.fill_ratio(),
        filter.estimated_fpr(),
        filter.estimated_count(),
    );
    assert_eq!(
        filter.encode(),
        data,
        "decoded filter re-encodes differently"
    );
}

/// [`check_decoder`] for the range filter, which is not a [`Filter`]: a
/// successful decode must answer ranges (short, long, across both ends of
/// `u64`) without panicking and re-encode to exactly its input.
pub fn check_range_decoder(data: &[u8]) {
    check_range_one(data);
    if let Some(resealed) = reseal(data) {
        check_range_one(&resealed);
    }
}

fn check_range_one(data: &[u8]) {
    let Ok(filter) = RangeFilter::decode(data) else {
        return;
    };
    for i in 0..16u64 {
        let lo = xxh3_64(&i.to_le_bytes());
        let _ = filter.may_contain(lo);
        let _ = filter.may_contain_range(lo, lo.saturating_add(1 << (4 * i)));
    }
    for (lo, hi) in [(0, 0), (0, u64::MAX), (u64::MAX, u64::MAX), (1, 0)] {
        let _ = filter.may_contain_range(lo, hi);
    }
    let _ = (
        filter.num_keys(),
        filter.hash_space(),
        filter.block_len(),
        filter.size_bytes(),
        filter.bits_per_key(),
        filter.expected_fpr(16),
    );
    assert_eq!(
        filter.encode(),
        data,
        "decoded filter re-encodes differently"
    );
}

/// `data` treated as header + body, with the body length set to what
/// follows the header and a correct checksum appended.
fn reseal(data: &[u8]) -> Option<Vec<u8>> {
    let body_len = u32::try_from(data.len().checked_sub(HEADER_LEN)?).ok()?;
    let mut out = data.to_vec();
    out.get_mut(8..HEADER_LEN)?
        .copy_from_slice(&body_len.to_le_bytes());
    let checksum = xxh3_64(&out);
    out.extend_from_slice(&checksum.to_le_bytes());
    Some(out)
}
