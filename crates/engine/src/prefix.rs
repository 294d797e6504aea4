//! Prefix extractors: which prefix of a key a prefix filter holds.
//!
//! A table written with an extractor holds, beside its key filter, a Bloom
//! filter of the distinct prefixes of its keys. A scan whose keys all share
//! one extracted prefix asks that filter first and skips the tables that
//! answer "no" (RocksDB's prefix Bloom, behind its `prefix_extractor`).
//!
//! The extractor's [`name`](PrefixExtractor::name) is stored in every table
//! it built. A table whose stored name differs from the database's current
//! extractor (or that has none) is never filtered by prefix: reopening with
//! another extractor is correct at once, and fast again once compaction has
//! rewritten the tables with the new one.

use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

use crate::iter::UserBounds;

/// A prefix a custom extractor defines.
///
/// The contract, which the built-in extractors meet: if `extract(p)` is
/// `Some(p)` (`p` is a whole prefix) then every key that starts with `p`
/// extracts to `p`. A scan of such a `p` can then skip every table whose
/// filter lacks `p`.
pub trait CustomPrefix: Send + Sync {
    /// A name that changes whenever `extract` does: tables built by an
    /// extractor of another name are not filtered by prefix.
    fn name(&self) -> &str;

    /// The prefix of `key`, or `None` for a key outside the extractor's
    /// domain (such keys are in no prefix filter).
    fn extract<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]>;
}

/// Which prefix of each key the prefix filters hold.
#[derive(Clone)]
#[non_exhaustive]
pub enum PrefixExtractor {
    /// The first `n` bytes; keys shorter than `n` have none.
    Fixed(usize),
    /// Up to and including the first occurrence of the byte (`user:` of
    /// `user:42:name` for `b':'`); keys without it have none.
    Delimited(u8),
    /// The application's own.
    Custom(Arc<dyn CustomPrefix>),
}

impl PrefixExtractor {
    /// The prefix of `key`, if it has one.
    #[must_use]
    pub fn extract<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        match self {
            Self::Fixed(n) => key.get(..*n),
            Self::Delimited(byte) => key
                .iter()
                .position(|b| b == byte)
                .and_then(|at| key.get(..=at)),
            Self::Custom(custom) => custom.extract(key),
        }
    }

    /// The name stored in the tables this extractor builds: `fixed:N`,
    /// `delimited:0xHH`, or `custom:` and the custom name.
    #[must_use]
    pub fn name(&self) -> String {
        match self {
            Self::Fixed(n) => format!("fixed:{n}"),
            Self::Delimited(byte) => format!("delimited:{byte:#04x}"),
            Self::Custom(custom) => format!("custom:{}", custom.name()),
        }
    }

    /// Whether `name` is this extractor's [`name`](Self::name), checked
    /// without building the name: a scan asks once per table.
    pub(crate) fn is_named(&self, name: &str) -> bool {
        match (self, Self::built_in(name)) {
            (Self::Custom(custom), _) => name.strip_prefix("custom:") == Some(custom.name()),
            (Self::Fixed(n), Some(Self::Fixed(named))) => *n == named,
            (Self::Delimited(byte), Some(Self::Delimited(named))) => *byte == named,
            _ => false,
        }
    }

    /// The built-in extractor [`name`](Self::name) gives `name`, if any.
    pub(crate) fn built_in(name: &str) -> Option<Self> {
        if let Some(n) = name.strip_prefix("fixed:") {
            return n.parse().ok().map(Self::Fixed);
        }
        let byte = name.strip_prefix("delimited:0x")?;
        u8::from_str_radix(byte, 16).ok().map(Self::Delimited)
    }

    /// The one prefix every key within `bounds` has, if there is one: the
    /// lower bound's prefix `p`, when `p` is a whole prefix and the upper
    /// bound does not pass the keys that start with `p`.
    pub(crate) fn shared_by<'b>(&self, bounds: &'b UserBounds) -> Option<&'b [u8]> {
        let (Bound::Included(lower) | Bound::Excluded(lower)) = &bounds.0 else {
            return None;
        };
        let prefix = self.extract(lower)?;
        if self.extract(prefix) != Some(prefix) {
            return None;
        }
        let within = match &bounds.1 {
            Bound::Unbounded => false,
            Bound::Included(upper) => upper.starts_with(prefix),
            Bound::Excluded(upper) => upper.starts_with(prefix) || is_successor(upper, prefix),
        };
        within.then_some(prefix)
    }
}

/// Whether `upper` is the least key above every key that starts with
/// `prefix` (the upper bound `crate::iter::prefix_bounds` gives a prefix
/// scan): `prefix` without its trailing `0xff` bytes, last byte plus one.
fn is_successor(upper: &[u8], prefix: &[u8]) -> bool {
    let kept = prefix.len() - prefix.iter().rev().take_while(|&&b| b == 0xff).count();
    match (
        upper.split_last(),
        prefix.get(..kept).and_then(<[u8]>::split_last),
    ) {
        (Some((last, head)), Some((byte, stem))) => head == stem && *last == byte.wrapping_add(1),
        _ => false,
    }
}

impl fmt::Debug for PrefixExtractor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl PartialEq for PrefixExtractor {
    /// Extractors are equal when their names are: what the tables record.
    fn eq(&self, other: &Self) -> bool {
        match other {
            Self::Custom(custom) => self.is_named(&format!("custom:{}", custom.name())),
            Self::Fixed(n) => matches!(self, Self::Fixed(m) if m == n),
            Self::Delimited(byte) => matches!(self, Self::Delimited(b) if b == byte),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::prefix_bounds;

    fn bounds(lower: &[u8], upper: Bound<&[u8]>) -> UserBounds {
        (Bound::Included(lower.to_vec()), upper.map(<[u8]>::to_vec))
    }

    #[test]
    fn fixed_and_delimited_extract() {
        assert_eq!(
            PrefixExtractor::Fixed(3).extract(b"abcd"),
            Some(&b"abc"[..])
        );
        assert_eq!(PrefixExtractor::Fixed(3).extract(b"ab"), None);
        let d = PrefixExtractor::Delimited(b':');
        assert_eq!(d.extract(b"user:1:x"), Some(&b"user:"[..]));
        assert_eq!(d.extract(b"user"), None);
        assert_eq!(d.name(), "delimited:0x3a");
        assert_eq!(PrefixExtractor::Fixed(8).name(), "fixed:8");
        for extractor in [PrefixExtractor::Fixed(8), d] {
            assert_eq!(
                PrefixExtractor::built_in(&extractor.name()),
                Some(extractor)
            );
        }
        assert_eq!(PrefixExtractor::built_in("custom:x"), None);
    }

    #[test]
    fn a_prefix_scan_shares_its_prefix() {
        let fixed = PrefixExtractor::Fixed(4);
        assert_eq!(fixed.shared_by(&prefix_bounds(b"user")), Some(&b"user"[..]));
        // Shorter than a whole prefix: keys under it have many prefixes.
        assert_eq!(fixed.shared_by(&prefix_bounds(b"use")), None);
        // Longer: still within one prefix.
        assert_eq!(
            fixed.shared_by(&prefix_bounds(b"user42")),
            Some(&b"user"[..])
        );
        let delimited = PrefixExtractor::Delimited(b':');
        assert_eq!(
            delimited.shared_by(&prefix_bounds(b"user:")),
            Some(&b"user:"[..])
        );
        assert_eq!(delimited.shared_by(&prefix_bounds(b"user")), None);
    }

    #[test]
    fn successors_match_prefix_bounds() {
        for prefix in [&b"ab"[..], b"a\xff", b"a\xfe\xff\xff", b"\xff", b""] {
            let expected = match prefix_bounds(prefix).1 {
                Bound::Excluded(upper) => Some(upper),
                _ => None,
            };
            for upper in [&b"ac"[..], b"b", b"a\xff", b"ab", b""] {
                assert_eq!(
                    is_successor(upper, prefix),
                    expected.as_deref() == Some(upper),
                    "{prefix:?} {upper:?}"
                );
            }
        }
        let custom = PrefixExtractor::Fixed(3);
        assert!(custom.is_named("fixed:3"));
        assert!(!custom.is_named("fixed:4"));
        assert!(!PrefixExtractor::Delimited(b':').is_named("fixed:3"));
    }

    #[test]
    fn a_range_shares_a_prefix_only_within_it() {
        let fixed = PrefixExtractor::Fixed(4);
        let inside = bounds(b"user1", Bound::Excluded(b"user9"));
        assert_eq!(fixed.shared_by(&inside), Some(&b"user"[..]));
        let inclusive = bounds(b"user1", Bound::Included(b"user9"));
        assert_eq!(fixed.shared_by(&inclusive), Some(&b"user"[..]));
        let past = bounds(b"user1", Bound::Included(b"usera"));
        assert_eq!(
            fixed.shared_by(&past),
            Some(&b"user"[..]),
            "usera starts with user"
        );
        let beyond = bounds(b"user1", Bound::Excluded(b"v"));
        assert_eq!(fixed.shared_by(&beyond), None);
        assert_eq!(fixed.shared_by(&bounds(b"user1", Bound::Unbounded)), None);
        let unbounded: UserBounds = (Bound::Unbounded, Bound::Excluded(b"user".to_vec()));
        assert_eq!(fixed.shared_by(&unbounded), None);
    }
}
