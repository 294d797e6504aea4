//! Builds a table's scan filters (`reader.rs`) in the pass that writes
//! its data blocks. Call order: `new`, `add` once per distinct user key in
//! ascending order (tombstones too: a range filter that missed a deleted
//! key would let an older version below it come back), `finish` once.
//!
//! The range filter maps each key to its 8 bytes from an offset every key
//! of the table shares the bytes before: any offset up to their common
//! prefix keeps order. The builder takes the common prefix, or less when
//! the longest key ends sooner than 8 bytes past it, so that the 8 bytes
//! end where the longest key does: keys that end in an integer (a fixed
//! prefix, then a big-endian `u64`) map to that integer, one per step,
//! not to it shifted left by the padding.
//!
//! That offset is known only at the end. Keys arrive sorted, so the
//! common prefix of the first key and the latest one only shrinks; each
//! key is kept as its 8 bytes past the common prefix *so far* and moved to
//! the final offset at the end with the first key's bytes in between
//! (every key shares the prefix so far with the first key): 12 bytes per
//! key, not the key.

use sift_filter::{BlockedBloomBuilder, Filter, FilterBuilder, KeyHash, RangeFilter, StaticFilter};

use super::reader::{common_prefix, encode, range_point};
use crate::filter_policy::ScanFilterChoice;
use crate::prefix::PrefixExtractor;

/// Fewest bits per key a range filter is built with: below 2 its hash
/// space is smaller than the key count and it answers "maybe" to nearly
/// every range.
const MIN_RANGE_BITS_PER_KEY: f64 = 2.0;

/// Prefix filter state.
#[derive(Debug)]
struct Prefixes {
    extractor: PrefixExtractor,
    bloom: BlockedBloomBuilder,
    /// The last prefix added: equal prefixes arrive together.
    last: Option<Vec<u8>>,
}

/// Range filter state.
#[derive(Debug)]
struct Points {
    bits_per_key: f64,
    first: Vec<u8>,
    /// The common prefix of every key so far.
    common: usize,
    /// The longest key so far.
    longest: usize,
    /// Each key's `range_point` at the offset that was common when it came.
    points: Vec<u64>,
    /// Where the common prefix shrank: (first key index, new length),
    /// ascending indexes, falling lengths.
    offsets: Vec<(usize, usize)>,
}

/// Builds the scan filters of one table.
#[derive(Debug)]
pub(crate) struct ScanFilterBuilder {
    prefixes: Option<Prefixes>,
    points: Option<Points>,
}

impl ScanFilterBuilder {
    pub(crate) fn new(choice: &ScanFilterChoice) -> Self {
        let prefixes = choice.prefix.as_ref().and_then(|(extractor, bits)| {
            Some(Prefixes {
                extractor: extractor.clone(),
                bloom: BlockedBloomBuilder::new(*bits).ok()?,
                last: None,
            })
        });
        let points = (choice.range_bits_per_key >= MIN_RANGE_BITS_PER_KEY).then(|| Points {
            bits_per_key: choice.range_bits_per_key,
            first: Vec::new(),
            common: 0,
            longest: 0,
            points: Vec::new(),
            offsets: Vec::new(),
        });
        Self { prefixes, points }
    }

    /// Adds the next distinct user key.
    pub(crate) fn add(&mut self, user_key: &[u8]) {
        if let Some(p) = &mut self.prefixes
            && let Some(prefix) = p.extractor.extract(user_key)
            && p.last.as_deref() != Some(prefix)
        {
            p.bloom.add(KeyHash::of(prefix));
            p.last = Some(prefix.to_vec());
        }
        if let Some(p) = &mut self.points {
            p.longest = p.longest.max(user_key.len());
            if p.points.is_empty() {
                p.first = user_key.to_vec();
                p.common = user_key.len();
                p.offsets.push((0, p.common));
            } else {
                let common = common_prefix(&p.first[..p.common], user_key);
                if common < p.common {
                    p.common = common;
                    p.offsets.push((p.points.len(), common));
                }
            }
            let point = range_point(user_key, p.common);
            // Keys come sorted, so at one offset their points never fall.
            debug_assert!(
                p.offsets
                    .last()
                    .is_some_and(|&(from, _)| from == p.points.len())
                    || p.points.last().is_none_or(|&last| last <= point),
                "scan filter keys out of order: {user_key:?}"
            );
            p.points.push(point);
        }
    }

    /// The encoded block, or `None` when the table gets no scan filter.
    pub(crate) fn finish(self) -> Option<Vec<u8>> {
        let prefix = self.prefixes.map(|p| {
            let filter = StaticFilter::Bloom(p.bloom.finish());
            (p.extractor.name(), filter.encode())
        });
        let range = self.points.and_then(|p| {
            let offset = p.common.min(p.longest.saturating_sub(8));
            let filter = RangeFilter::build(p.final_points(offset), p.bits_per_key).ok()?;
            Some((offset, filter.encode()))
        });
        if prefix.is_none() && range.is_none() {
            return None;
        }
        Some(encode(
            prefix
                .as_ref()
                .map(|(name, f)| (name.as_str(), f.as_slice())),
            range.as_ref().map(|(offset, f)| (*offset, f.as_slice())),
        ))
    }
}

impl Points {
    /// Every key's point at `to`, an offset up to the common prefix.
    fn final_points(&self, to: usize) -> impl Iterator<Item = u64> + '_ {
        let ends = self
            .offsets
            .iter()
            .skip(1)
            .map(|&(start, _)| start)
            .chain(std::iter::once(self.points.len()));
        self.offsets
            .iter()
            .zip(ends)
            .flat_map(move |(&(start, offset), end)| {
                let shift = offset - to;
                let between = range_point(&self.first[..offset], to);
                self.points[start..end]
                    .iter()
                    .map(move |&point| shifted(between, point, shift))
            })
    }
}

/// The point of a key at offset `o` given its point at `o + shift` and the
/// point at `o` of the `shift` bytes in between (`between`, left-aligned).
fn shifted(between: u64, point: u64, shift: usize) -> u64 {
    match shift {
        0 => point,
        1..=7 => {
            let bits = 8 * shift as u32;
            let keep = u64::MAX << (64 - bits);
            (between & keep) | (point >> bits)
        }
        _ => between,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Moving each key to the final offset gives what mapping it there
    /// directly gives.
    #[test]
    fn points_move_to_the_final_common_prefix() {
        let keys: [&[u8]; 7] = [
            b"user:0000000001:a",
            b"user:0000000001:b",
            b"user:0000000002",
            b"user:00001",
            b"user:1",
            b"userz",
            b"uzzzzzzzzzzzzzzzzz",
        ];
        let mut builder = ScanFilterBuilder::new(&ScanFilterChoice {
            prefix: None,
            range_bits_per_key: 10.0,
        });
        keys.iter().for_each(|key| builder.add(key));
        let points = builder.points.unwrap();
        assert_eq!(points.common, 1);
        for to in [0, 1] {
            let direct: Vec<u64> = keys.iter().map(|k| range_point(k, to)).collect();
            assert_eq!(points.final_points(to).collect::<Vec<_>>(), direct);
        }
    }
}
