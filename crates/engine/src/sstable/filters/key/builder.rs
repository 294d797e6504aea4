//! Builds the key filter in the same pass as the data blocks: one filter for
//! the whole table, or one per partition (a run of consecutive data blocks)
//! once the table holds more distinct keys than `partition_keys`.
//!
//! Call order: `new`, then (`add`* `block_boundary`)*, then `finish` once.

use sift_filter::math::binary_fuse_bits_per_key;
use sift_filter::{
    BinaryFuse8, BinaryFuse16, BlockedBloomBuilder, Filter, FilterBuilder, FilterKind, KeyHash,
    RibbonBuilder, SplitBlockBloomBuilder, StaticFilter,
};

use crate::filter_policy::{FilterChoice, FilterKindChoice};

/// Target size of one filter partition: 4 KiB, one page (RocksDB's
/// `metadata_block_size`). Partitions exist so that a lookup reads and
/// keeps one small filter, which a tight budget holds or drops on its own
/// (`sstable::piece`), and to bound the builder's memory (it buffers 16
/// bytes per key until a filter is built) and Ribbon's banding work. At
/// 4 KiB a blocked Bloom partition loses under 1.6% to rounding up to
/// whole 64-byte lines.
const PARTITION_BYTES: f64 = 4.0 * 1024.0;

/// Fewest keys in a partition sized by [`PARTITION_BYTES`], so that very
/// high bits/key still make partitions worth their index entry.
const MIN_PARTITION_KEYS: u64 = 256;

/// Keys per partition: about [`PARTITION_BYTES`] of filter, but never more
/// than `partition_keys`, so that a table past the threshold has at least
/// two partitions.
pub(crate) fn keys_per_partition(bits_per_key: f64, partition_keys: u64) -> u64 {
    let by_size = (PARTITION_BYTES * 8.0 / bits_per_key) as u64;
    by_size.max(MIN_PARTITION_KEYS).min(partition_keys.max(1))
}

/// A finished, encoded filter.
#[derive(Debug)]
pub(crate) struct BuiltFilter {
    /// The filter's own encoding (`Filter::encode`).
    pub encoded: Vec<u8>,
    /// `Filter::size_bytes`: filter data without the envelope.
    pub data_bytes: u64,
    /// The kind built (a Ribbon or Binary Fuse table may hold blocked
    /// Bloom fallbacks).
    pub kind: FilterKind,
}

/// What [`KeyFilterBuilder::finish`] produces.
#[derive(Debug)]
pub(crate) enum FilterOutput {
    /// No filter (kind `None`, zero bits per key, or no keys).
    None,
    /// One filter for the whole table.
    Whole(BuiltFilter),
    /// One filter per partition, with the last user key it covers.
    Partitioned(Vec<(BuiltFilter, Vec<u8>)>),
}

/// An empty builder of the chosen kind, cloned for each filter.
#[derive(Debug, Clone)]
enum Prototype {
    Bloom(BlockedBloomBuilder),
    SplitBlock(SplitBlockBloomBuilder),
    Ribbon(RibbonBuilder),
    /// Binary Fuse within `bits_per_key`; Ribbon where those bits cannot
    /// pay for 8-bit fingerprints, blocked Bloom where construction fails.
    Fuse {
        bits_per_key: f64,
        narrow: RibbonBuilder,
        fallback: BlockedBloomBuilder,
    },
}

impl Prototype {
    /// A builder for `choice`, `None` for no filter or bits per key no
    /// filter accepts.
    fn new(choice: FilterChoice) -> Option<Self> {
        if !choice.enabled() {
            return None;
        }
        let bits = choice.bits_per_key;
        match choice.kind {
            FilterKindChoice::BlockedBloom => BlockedBloomBuilder::new(bits).ok().map(Self::Bloom),
            FilterKindChoice::SplitBlockBloom => {
                SplitBlockBloomBuilder::new(bits).ok().map(Self::SplitBlock)
            }
            FilterKindChoice::Ribbon => RibbonBuilder::new(bits).ok().map(Self::Ribbon),
            FilterKindChoice::BinaryFuse => Some(Self::Fuse {
                bits_per_key: bits,
                narrow: RibbonBuilder::new(bits).ok()?,
                fallback: BlockedBloomBuilder::new(bits).ok()?,
            }),
            FilterKindChoice::None => None,
        }
    }

    fn build(&self, hashes: &[KeyHash]) -> BuiltFilter {
        let filter = match self {
            Self::Bloom(proto) => StaticFilter::Bloom(fill(proto, hashes).finish()),
            Self::SplitBlock(proto) => StaticFilter::SplitBlock(fill(proto, hashes).finish()),
            Self::Ribbon(proto) => fill(proto, hashes).finish(),
            Self::Fuse {
                bits_per_key,
                narrow,
                fallback,
            } => {
                let pays_for =
                    |width| binary_fuse_bits_per_key(hashes.len() as u64, width) <= *bits_per_key;
                let fuse = if pays_for(16) {
                    BinaryFuse16::from_hashes(hashes).map(StaticFilter::BinaryFuse16)
                } else if pays_for(8) {
                    BinaryFuse8::from_hashes(hashes).map(StaticFilter::BinaryFuse8)
                } else {
                    Ok(fill(narrow, hashes).finish())
                };
                fuse.unwrap_or_else(|_| StaticFilter::Bloom(fill(fallback, hashes).finish()))
            }
        };
        BuiltFilter {
            encoded: filter.encode(),
            data_bytes: filter.size_bytes() as u64,
            kind: filter.kind(),
        }
    }
}

/// A copy of the empty builder `proto` holding `hashes`.
fn fill<B: FilterBuilder + Clone>(proto: &B, hashes: &[KeyHash]) -> B {
    let mut builder = proto.clone();
    hashes.iter().for_each(|&h| builder.add(h));
    builder
}

/// Collects one hash per distinct user key and builds the key filter(s).
#[derive(Debug)]
pub(crate) struct KeyFilterBuilder {
    /// `None` when the table gets no filter.
    prototype: Option<Prototype>,
    partition_keys: u64,
    keys_per_partition: u64,
    /// Hashes not yet in a built filter: every hash while undecided, the
    /// open partition's once partitioned.
    hashes: Vec<KeyHash>,
    /// While undecided: where each closed partition ends in `hashes`, and
    /// its last user key.
    pending: Vec<(usize, Vec<u8>)>,
    /// Built partitions (once partitioned).
    partitions: Vec<(BuiltFilter, Vec<u8>)>,
    partitioned: bool,
    distinct: u64,
}

impl KeyFilterBuilder {
    /// A builder for `choice`; tables with more than `partition_keys`
    /// distinct keys get partitions.
    pub(crate) fn new(choice: FilterChoice, partition_keys: u64) -> Self {
        Self {
            prototype: Prototype::new(choice),
            partition_keys: partition_keys.max(1),
            keys_per_partition: keys_per_partition(choice.bits_per_key, partition_keys),
            hashes: Vec::new(),
            pending: Vec::new(),
            partitions: Vec::new(),
            partitioned: false,
            distinct: 0,
        }
    }

    /// Adds the hash of the next distinct user key.
    pub(crate) fn add(&mut self, hash: KeyHash) {
        self.distinct += 1;
        let Some(prototype) = &self.prototype else {
            return;
        };
        self.hashes.push(hash);
        if !self.partitioned && self.distinct > self.partition_keys {
            // The table needs partitions: build those already closed.
            let mut start = 0;
            for (end, last_key) in self.pending.drain(..) {
                let hashes = self.hashes.get(start..end).unwrap_or_default();
                self.partitions.push((prototype.build(hashes), last_key));
                start = end;
            }
            self.hashes.drain(..start);
            self.partitioned = true;
        }
    }

    /// A data block ending with user key `last_user_key` was written: the
    /// open partition closes here if it is full.
    pub(crate) fn block_boundary(&mut self, last_user_key: &[u8]) {
        let Some(prototype) = &self.prototype else {
            return;
        };
        debug_assert!(
            (self.pending.last().map(|(_, key)| key))
                .or(self.partitions.last().map(|(_, key)| key))
                .is_none_or(|previous| previous.as_slice() <= last_user_key),
            "filter partition boundaries out of order at {last_user_key:?}"
        );
        let open_from = if self.partitioned {
            0
        } else {
            self.pending.last().map_or(0, |(end, _)| *end)
        };
        if ((self.hashes.len() - open_from) as u64) < self.keys_per_partition {
            return;
        }
        if self.partitioned {
            let built = prototype.build(&self.hashes);
            self.partitions.push((built, last_user_key.to_vec()));
            self.hashes.clear();
        } else {
            self.pending
                .push((self.hashes.len(), last_user_key.to_vec()));
        }
    }

    /// Distinct user keys added.
    pub(crate) fn distinct_keys(&self) -> u64 {
        self.distinct
    }

    /// Bytes of filter the table will hold if finished now (about).
    pub(crate) fn estimated_bytes(&self, bits_per_key: f64) -> u64 {
        match self.prototype {
            Some(_) => (self.distinct as f64 * bits_per_key / 8.0) as u64,
            None => 0,
        }
    }

    /// Builds what is left; `last_user_key` is the table's largest.
    pub(crate) fn finish(mut self, last_user_key: &[u8]) -> FilterOutput {
        let Some(prototype) = &self.prototype else {
            return FilterOutput::None;
        };
        if self.distinct == 0 {
            return FilterOutput::None;
        }
        if !self.partitioned {
            return FilterOutput::Whole(prototype.build(&self.hashes));
        }
        if !self.hashes.is_empty() {
            let built = prototype.build(&self.hashes);
            self.partitions.push((built, last_user_key.to_vec()));
        }
        FilterOutput::Partitioned(self.partitions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn built(kind: FilterKindChoice, bits_per_key: f64, keys: u64) -> StaticFilter {
        let choice = FilterChoice { kind, bits_per_key };
        let hashes: Vec<KeyHash> = (0..keys).map(|i| KeyHash::of(&i.to_le_bytes())).collect();
        let prototype = Prototype::new(choice).expect("a filter");
        let encoded = prototype.build(&hashes).encoded;
        let filter = StaticFilter::decode(&encoded).expect("decodes");
        assert!(
            hashes.iter().all(|&h| filter.may_contain(h)),
            "no false negatives"
        );
        filter
    }

    #[test]
    fn binary_fuse_takes_the_widest_fingerprint_the_bits_pay_for() {
        let keys = 100_000;
        // 1.17 slots a key at 100,000 keys: 9.4 bits for 8-bit
        // fingerprints, 18.7 for 16-bit.
        let fuse = FilterKindChoice::BinaryFuse;
        assert!(matches!(
            built(fuse, 20.0, keys),
            StaticFilter::BinaryFuse16(_)
        ));
        assert!(matches!(
            built(fuse, 18.0, keys),
            StaticFilter::BinaryFuse8(_)
        ));
        assert!(matches!(
            built(fuse, 10.0, keys),
            StaticFilter::BinaryFuse8(_)
        ));
        assert!(matches!(built(fuse, 8.0, keys), StaticFilter::Ribbon(_)));
        let spent = built(fuse, 18.0, keys).size_bytes() as f64 * 8.0 / keys as f64;
        assert!(spent < 10.0, "{spent} bits/key: the rest is left unspent");
    }
}
