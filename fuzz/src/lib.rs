//! What every decoder fuzz target checks.

use sift_filter::{DecodeError, Filter, KeyHash};

/// Decodes `data`; a successful decode must not panic at query time and
/// must re-encode to exactly the input (the encoding is canonical, so a
/// decoder that accepts bytes no encoder writes is a bug).
pub fn check_decoder<F: Filter>(data: &[u8], decode: impl Fn(&[u8]) -> Result<F, DecodeError>) {
    let Ok(filter) = decode(data) else { return };
    for i in 0..16u64 {
        let _ = filter.may_contain(KeyHash::of(&i.to_le_bytes()));
    }
    let _ = (filter.size_bytes(), filter.fill_ratio(), filter.estimated_fpr(), filter.estimated_count());
    assert_eq!(filter.encode(), data, "decoded filter re-encodes differently");
}
