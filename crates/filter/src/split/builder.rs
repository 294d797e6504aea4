//! The builder of a [`SplitBlockBloom`]: buffers hashes, sizes at `finish`.

use super::SplitBlockBloom;
use crate::block_array::check_bits_per_key;
use crate::error::Result;
use crate::filter::FilterBuilder;
use crate::hash::KeyHash;

/// Builds a [`SplitBlockBloom`] whose size is known only at the end, e.g.
/// while an SSTable is written: [`new`](Self::new), then
/// [`add`](FilterBuilder::add) per key, then [`finish`](FilterBuilder::finish)
/// once, which sizes the filter for the hashes added (duplicates included:
/// they cost a little space, never correctness).
#[derive(Clone, Debug)]
pub struct SplitBlockBloomBuilder {
    hashes: Vec<KeyHash>,
    bits_per_key: f64,
}

impl SplitBlockBloomBuilder {
    /// A builder for filters of `bits_per_key` bits per key (fractional
    /// allowed); `Error::InvalidParameter` unless it is finite and positive.
    pub fn new(bits_per_key: f64) -> Result<Self> {
        Ok(Self {
            hashes: Vec::new(),
            bits_per_key: check_bits_per_key(bits_per_key)?,
        })
    }
}

impl FilterBuilder for SplitBlockBloomBuilder {
    type Output = SplitBlockBloom;

    fn add(&mut self, hash: KeyHash) {
        self.hashes.push(hash);
    }

    fn len(&self) -> usize {
        self.hashes.len()
    }

    /// Equals [`SplitBlockBloom::from_hashes`] over the added hashes, except
    /// that a size past the largest encodable filter is capped there (the
    /// filter is then fuller than asked, never wrong) instead of failing.
    fn finish(self) -> SplitBlockBloom {
        SplitBlockBloom::build(&self.hashes, self.bits_per_key)
    }
}
