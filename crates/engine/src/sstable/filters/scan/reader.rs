//! The scan filters of a table (format version 4): a prefix filter and a
//! range filter, in one block, which scans ask before they read a table.
//!
//! Block contents (`docs/format.md`, "Scan filters"):
//! `bytes` extractor name (empty: no prefix filter), `bytes` prefix filter
//! (a blocked Bloom encoding of the `KeyHash` of every distinct prefix;
//! empty without a name), `varint` the range filter's key offset, `bytes`
//! range filter (a `RangeFilter` encoding; empty: none).
//!
//! As with the key filter, damage never fails a read: a block that fails
//! its checksum or does not decode answers "may hold" for every scan, and
//! the problem is kept for `verify`.

#![deny(clippy::indexing_slicing)]

use std::ops::Bound;
use std::path::Path;

use sift_filter::{Filter, KeyHash, RangeFilter, StaticFilter};

use crate::encoding::{Decoder, put_bytes, put_varint};
use crate::error::{Corrupt, Error, Result};
use crate::fs::ReadableFile;
use crate::iter::UserBounds;
use crate::prefix::PrefixExtractor;
use crate::sstable::trailer::{BlockHandle, read_block};

/// Longest extractor name stored.
const MAX_NAME: usize = 1 << 10;

/// A table's filters lie within its file, at most 4 GiB each (the
/// filter envelope's limit).
const MAX_FILTER: usize = u32::MAX as usize;

/// The integer a user key maps to in a table whose keys share their first
/// `offset` bytes: the next 8 bytes, big-endian, zero-padded. For keys that
/// share those `offset` bytes the map keeps order (`a <= b` gives
/// `point(a) <= point(b)`), which is all a range filter needs.
pub(crate) fn range_point(key: &[u8], offset: usize) -> u64 {
    let mut bytes = [0; 8];
    let tail = key.get(offset..).unwrap_or_default();
    for (byte, &from) in bytes.iter_mut().zip(tail) {
        *byte = from;
    }
    u64::from_be_bytes(bytes)
}

/// The largest point a key at or below `upper` (below, if `excluded`) can
/// map to. A key below `upper` maps to `range_point(upper)` itself only if
/// its 8 bytes match: when `upper` runs past them, or when the key is
/// `upper` with trailing zero bytes dropped. Otherwise one less.
fn last_point_below(upper: &[u8], excluded: bool, offset: usize) -> u64 {
    let point = range_point(upper, offset);
    let exact = upper.len() <= offset + 8 && upper.last() != Some(&0);
    if excluded && exact && point > 0 {
        point - 1
    } else {
        point
    }
}

/// Length of the common prefix of `a` and `b`.
pub(crate) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// What a scan asks every table besides its bounds: computed once per scan.
#[derive(Debug, Default)]
pub(crate) struct ScanProbe {
    /// The database's prefix extractor and the hash of the prefix every
    /// key of the scan shares, if they share one.
    pub prefix: Option<(PrefixExtractor, KeyHash)>,
    /// Whether to ask the range filters (the scan is bounded on both sides).
    pub ranged: bool,
}

/// The encoded block.
pub(crate) fn encode(prefix: Option<(&str, &[u8])>, range: Option<(usize, &[u8])>) -> Vec<u8> {
    let mut out = Vec::new();
    let (name, filter) = prefix.unwrap_or_default();
    put_bytes(&mut out, name.as_bytes());
    put_bytes(&mut out, filter);
    let (offset, filter) = range.unwrap_or_default();
    put_varint(&mut out, offset as u64);
    put_bytes(&mut out, filter);
    out
}

/// The scan filters of an open table.
#[derive(Debug, Default)]
pub(crate) struct ScanFilters {
    /// The extractor's name and the prefix filter.
    prefix: Option<(String, StaticFilter)>,
    /// The key offset and the range filter.
    range: Option<(usize, RangeFilter)>,
    /// Damage found at load: file offset and what was wrong.
    problem: Option<(u64, String)>,
}

impl ScanFilters {
    /// Reads the block at `handle` (none for `None`, a table of an older
    /// format or written without scan filters). `common` is the length of
    /// the common prefix of the table's smallest and largest user keys: a
    /// range filter's offset can be no longer.
    pub(crate) fn load(
        file: &dyn ReadableFile,
        path: &Path,
        handle: Option<BlockHandle>,
        limit: u64,
        common: usize,
    ) -> Result<Self> {
        let Some(handle) = handle else {
            return Ok(Self::default());
        };
        let bytes = match read_block(file, path, handle, limit) {
            Ok(bytes) => bytes,
            Err(Error::Corruption { offset, detail, .. }) => {
                return Ok(Self::damaged(offset, detail));
            }
            Err(other) => return Err(other),
        };
        Ok(match Self::decode(&bytes, common) {
            Ok(filters) => filters,
            Err(c) => Self::damaged(
                handle.offset.saturating_add(c.offset),
                format!("scan filters: {}", c.detail),
            ),
        })
    }

    /// No filters: they rule nothing out.
    pub(crate) const fn none() -> Self {
        Self {
            prefix: None,
            range: None,
            problem: None,
        }
    }

    fn damaged(offset: u64, detail: String) -> Self {
        Self {
            problem: Some((offset, detail)),
            ..Self::default()
        }
    }

    fn decode(bytes: &[u8], common: usize) -> Result<Self, Corrupt> {
        let mut d = Decoder::new(bytes);
        let name_at = d.position() as u64;
        let name = d.length_prefixed(MAX_NAME, "extractor name")?;
        let name = std::str::from_utf8(name)
            .map_err(|_| Corrupt::new(name_at, "extractor name is not UTF-8"))?
            .to_owned();
        let filter_at = d.position() as u64;
        let filter = d.length_prefixed(MAX_FILTER, "prefix filter")?;
        let prefix = match (name.is_empty(), filter.is_empty()) {
            (true, true) => None,
            (false, false) => {
                let filter = StaticFilter::decode(filter)
                    .map_err(|e| Corrupt::new(filter_at, format!("prefix filter: {e}")))?;
                Some((name, filter))
            }
            _ => return Err(Corrupt::new(filter_at, "prefix filter without its name")),
        };
        let offset_at = d.position() as u64;
        let offset = d.varint_len(common, "range key offset")?;
        let filter_at = d.position() as u64;
        let filter = d.length_prefixed(MAX_FILTER, "range filter")?;
        let range = if filter.is_empty() {
            None
        } else {
            let filter = RangeFilter::decode(filter)
                .map_err(|e| Corrupt::new(filter_at, format!("range filter: {e}")))?;
            Some((offset, filter))
        };
        if !d.is_empty() {
            return Err(Corrupt::new(offset_at, "bytes after the range filter"));
        }
        Ok(Self {
            prefix,
            range,
            problem: None,
        })
    }

    /// `Some(false)` only if the table holds no key within `bounds`, given
    /// its key range `[smallest, largest]` (user keys); `None` when no
    /// filter of this table applies to the scan of `probe`.
    pub(crate) fn may_hold(
        &self,
        probe: &ScanProbe,
        bounds: &UserBounds,
        smallest: &[u8],
        largest: &[u8],
    ) -> Option<bool> {
        if let (Some((extractor, hash)), Some((built_by, filter))) = (&probe.prefix, &self.prefix)
            && extractor.is_named(built_by)
        {
            // A "maybe" is nearly always right (the prefix is there), and
            // then the range filter would answer "maybe" too: a scan that
            // finds keys pays one probe, not two.
            return Some(filter.may_contain(*hash));
        }
        if !probe.ranged {
            return None;
        }
        let (lower, upper) = (bounds.0.as_ref(), bounds.1.as_ref());
        let (lower, upper) = (lower.map(Vec::as_slice), upper.map(Vec::as_slice));
        self.range_may_hold(lower, upper, smallest, largest)
    }

    /// `Some(false)` only if the range filter shows the table holds no key
    /// within `(lower, upper)`, given its key range `[smallest, largest]`;
    /// `None` without a range filter.
    pub(crate) fn range_may_hold(
        &self,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        smallest: &[u8],
        largest: &[u8],
    ) -> Option<bool> {
        let (offset, filter) = self.range.as_ref()?;
        // Within the table's key range every key shares its first `offset`
        // bytes, so both ends map in order. An excluded lower bound is
        // taken as included.
        let lower = match lower {
            Bound::Included(l) | Bound::Excluded(l) => l.max(smallest),
            Bound::Unbounded => smallest,
        };
        let (upper, excluded) = match upper {
            Bound::Included(u) if u <= largest => (u, false),
            Bound::Excluded(u) if u <= largest => (u, true),
            _ => (largest, false),
        };
        if lower > upper {
            return None;
        }
        let a = range_point(lower, *offset);
        let b = last_point_below(upper, excluded, *offset);
        Some(filter.may_contain_range(a, b.max(a)))
    }

    /// Which filter, if any, answers "no" for `user_key`, a key the table
    /// holds: a false negative, so damage `verify` reports. The prefix
    /// filter is checked when its extractor is a built-in one (a custom
    /// extractor is not known here).
    pub(crate) fn misses(&self, user_key: &[u8]) -> Option<&'static str> {
        if let Some((name, filter)) = &self.prefix
            && let Some(extractor) = PrefixExtractor::built_in(name)
            && let Some(prefix) = extractor.extract(user_key)
            && !filter.may_contain(KeyHash::of(prefix))
        {
            return Some("prefix filter");
        }
        match &self.range {
            Some((offset, filter)) if !filter.may_contain(range_point(user_key, *offset)) => {
                Some("range filter")
            }
            _ => None,
        }
    }

    /// The damage found at load, as the error `verify` reports.
    pub(crate) fn problem(&self, path: &Path) -> Option<Error> {
        self.problem
            .as_ref()
            .map(|(offset, detail)| Error::corruption(path, *offset, detail.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_points_keep_order_past_the_offset() {
        assert_eq!(
            range_point(b"user:\x00\x00\x00\x00\x00\x00\x01\x00", 5),
            256
        );
        assert_eq!(range_point(b"user:\x01", 5), 1 << 56);
        assert_eq!(range_point(b"user:", 5), 0);
        assert_eq!(range_point(b"ab", 7), 0, "short keys map to 0");
        let mut keys: Vec<&[u8]> = vec![b"k", b"k\x00", b"k\x00\x01", b"ka", b"kab", b"kb"];
        keys.sort_unstable();
        let points: Vec<u64> = keys.iter().map(|k| range_point(k, 1)).collect();
        assert!(points.is_sorted(), "{points:?}");
        assert_eq!(common_prefix(b"user:1", b"user:2"), 5);
        assert_eq!(common_prefix(b"a", b"a"), 1);
    }

    #[test]
    fn an_excluded_upper_bound_drops_its_own_point_when_no_key_below_shares_it() {
        assert_eq!(
            last_point_below(b"i\x00\x00\x00\x00\x00\x00\x00\x10", true, 1),
            15
        );
        assert_eq!(
            last_point_below(b"i\x00\x00\x00\x00\x00\x00\x00\x10", false, 1),
            16
        );
        // `ab` < `ab\0` and both map to the same point.
        assert_eq!(last_point_below(b"ab\x00", true, 0), range_point(b"ab", 0));
        // Keys past the 8 bytes: `k` + 8 bytes + `a` < `k` + 8 bytes + `b`.
        let long = b"k12345678b";
        assert_eq!(last_point_below(long, true, 1), range_point(long, 1));
        assert_eq!(last_point_below(b"k", true, 1), 0);
    }

    #[test]
    fn damaged_bytes_are_refused_not_panicked_on() {
        let range = RangeFilter::build([1, 5, 9], 10.0).unwrap().encode();
        let good = encode(None, Some((2, &range)));
        assert!(ScanFilters::decode(&good, 2).is_ok());
        assert!(
            ScanFilters::decode(&good, 1).is_err(),
            "offset past the common prefix"
        );
        for cut in 0..good.len() {
            assert!(ScanFilters::decode(good.get(..cut).unwrap(), 2).is_err());
        }
        let nameless = encode(Some(("", b"x")), None);
        assert!(ScanFilters::decode(&nameless, 0).is_err());
    }
}
