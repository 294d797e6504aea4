//! Bounds on user keys: membership tests and the bounds of a prefix scan.

use std::ops::Bound;

/// Lower and upper bound on user keys, in the order `RangeBounds` gives them.
pub(crate) type UserBounds = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// Whether `key` sorts before the lower bound `start`.
pub(super) fn before_start(start: &Bound<Vec<u8>>, key: &[u8]) -> bool {
    match start {
        Bound::Included(bound) => key < bound.as_slice(),
        Bound::Excluded(bound) => key <= bound.as_slice(),
        Bound::Unbounded => false,
    }
}

/// Whether `key` sorts after the upper bound `end`.
pub(super) fn after_end(end: &Bound<Vec<u8>>, key: &[u8]) -> bool {
    match end {
        Bound::Included(bound) => key > bound.as_slice(),
        Bound::Excluded(bound) => key >= bound.as_slice(),
        Bound::Unbounded => false,
    }
}

/// The bounds of exactly the user keys that start with `prefix`.
///
/// Lower: the prefix itself, included. Upper: the prefix with its trailing
/// `0xff` bytes dropped and its last remaining byte incremented, excluded
/// (`"ab\xff"` -> `"ac"`); unbounded when nothing remains (an empty prefix,
/// or one of `0xff` bytes only), since every longer key then matches.
pub(crate) fn prefix_bounds(prefix: &[u8]) -> UserBounds {
    let mut upper = prefix.to_vec();
    while upper.last() == Some(&0xff) {
        upper.pop();
    }
    let end = match upper.last_mut() {
        // Below 0xff after the loop, so the increment cannot overflow.
        Some(byte) => {
            *byte += 1;
            Bound::Excluded(upper)
        }
        None => Bound::Unbounded,
    };
    (Bound::Included(prefix.to_vec()), end)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::iter::testing::user_key;

    fn contains(bounds: &UserBounds, key: &[u8]) -> bool {
        !before_start(&bounds.0, key) && !after_end(&bounds.1, key)
    }

    #[test]
    fn prefix_bounds_increment_the_last_byte() {
        assert_eq!(
            prefix_bounds(b"ab"),
            (
                Bound::Included(b"ab".to_vec()),
                Bound::Excluded(b"ac".to_vec())
            )
        );
    }

    #[test]
    fn prefix_bounds_drop_trailing_ff_bytes() {
        assert_eq!(
            prefix_bounds(b"a\xff\xff").1,
            Bound::Excluded(b"b".to_vec())
        );
        assert_eq!(
            prefix_bounds(b"\x01\xfe\xff").1,
            Bound::Excluded(b"\x01\xff".to_vec())
        );
    }

    #[test]
    fn prefix_bounds_are_unbounded_above_for_empty_and_all_ff_prefixes() {
        assert_eq!(
            prefix_bounds(b""),
            (Bound::Included(Vec::new()), Bound::Unbounded)
        );
        assert_eq!(
            prefix_bounds(b"\xff\xff"),
            (Bound::Included(b"\xff\xff".to_vec()), Bound::Unbounded)
        );
        assert!(contains(&prefix_bounds(b"\xff"), b"\xff\xff\xff"));
        assert!(!contains(&prefix_bounds(b"\xff"), b"\xfe\xff"));
    }

    #[test]
    fn membership_at_each_kind_of_bound() {
        let key = |k: &[u8]| k.to_vec();
        let inclusive = (Bound::Included(key(b"b")), Bound::Included(key(b"d")));
        let exclusive = (Bound::Excluded(key(b"b")), Bound::Excluded(key(b"d")));
        for (k, inside_inclusive, inside_exclusive) in [
            (&b"a"[..], false, false),
            (b"b", true, false),
            (b"c", true, true),
            (b"d", true, false),
            (b"da", false, false),
        ] {
            assert_eq!(contains(&inclusive, k), inside_inclusive, "{k:?}");
            assert_eq!(contains(&exclusive, k), inside_exclusive, "{k:?}");
        }
        assert!(contains(&(Bound::Unbounded, Bound::Unbounded), b""));
    }

    proptest! {
        #[test]
        fn prefix_bounds_hold_exactly_the_keys_with_the_prefix(
            prefix in user_key(),
            keys in prop::collection::vec(user_key(), 0..32),
        ) {
            let bounds = prefix_bounds(&prefix);
            for key in keys.iter().chain([&prefix]) {
                prop_assert_eq!(contains(&bounds, key), key.starts_with(&prefix), "{:?}", key);
            }
        }

    }
}
