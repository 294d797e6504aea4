//! What the two blocked Bloom filters share: [`BlockedBloom`] with 512-bit
//! blocks and [`SplitBlockBloom`] with 256-bit ones. Both are an array of
//! fixed-size blocks sized from bits per key, stored as a probe count, a
//! block count and the blocks, and queried through AVX2 where the CPU has
//! it.
//!
//! [`BlockedBloom`]: crate::BlockedBloom
//! [`SplitBlockBloom`]: crate::SplitBlockBloom

use crate::codec::Reader;
use crate::error::{DecodeError, Error, Result};

/// Body bytes before the blocks: probe count (`u32`), block count (`u64`).
const BODY_PREFIX: usize = 4 + 8;

/// The block size of a filter kind, and the limits that follow from it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlockArray {
    /// Bytes per block.
    pub(crate) block_bytes: usize,
    /// The most probes a filter of the kind uses or decodes.
    pub(crate) max_probes: u32,
}

impl BlockArray {
    /// Bits per block.
    pub(crate) const fn block_bits(self) -> u32 {
        (self.block_bytes * 8) as u32
    }

    /// Most blocks in one filter. The envelope stores the body length as a
    /// `u32`, so `BODY_PREFIX + block_bytes · blocks` must fit: 67,108,863
    /// blocks of 64 bytes, 134,217,727 of 32 (4 GiB).
    pub(crate) const fn max_blocks(self) -> usize {
        (u32::MAX as usize - BODY_PREFIX) / self.block_bytes
    }

    /// Checks `bits_per_key` and that `n` keys at it fit in
    /// [`max_blocks`](Self::max_blocks): what `from_hashes` and
    /// `with_capacity` refuse.
    pub(crate) fn check_size(self, n: u64, bits_per_key: f64) -> Result<()> {
        let wanted = self.wanted_blocks(n, check_bits_per_key(bits_per_key)?);
        let max = self.max_blocks();
        if wanted > max as f64 {
            return Err(Error::InvalidParameter(format!(
                "{n} keys at {bits_per_key} bits/key need {wanted} blocks, more than the {max} an encoding holds"
            )));
        }
        Ok(())
    }

    /// The blocks for `n` keys at `bits_per_key`, capped at
    /// [`max_blocks`](Self::max_blocks), and the bits per key they give
    /// each key (`bits_per_key` itself for `n = 0`): what the probe count
    /// is chosen for.
    pub(crate) fn sized(self, n: u64, bits_per_key: f64) -> (usize, f64) {
        let blocks = self
            .wanted_blocks(n, bits_per_key)
            .min(self.max_blocks() as f64) as usize;
        let actual = match n {
            0 => bits_per_key,
            n => (blocks as f64 * f64::from(self.block_bits())) / n as f64,
        };
        (blocks, actual)
    }

    /// `max(1, ceil(n · bits_per_key / block_bits))`, as a float so that
    /// huge requests can be compared with the limit before any conversion.
    fn wanted_blocks(self, n: u64, bits_per_key: f64) -> f64 {
        (n as f64 * bits_per_key / f64::from(self.block_bits()))
            .ceil()
            .max(1.0)
    }

    /// Reads a body's probe count and block count, and returns them with
    /// the blocks' bytes: exactly `block_bytes` per block, the rest of the
    /// body. Rejects a probe count outside `1..=max_probes`, zero blocks,
    /// more than [`max_blocks`](Self::max_blocks), and a count that
    /// disagrees with the payload length.
    pub(crate) fn read<'a>(self, r: &mut Reader<'a>) -> Result<(u32, &'a [u8]), DecodeError> {
        let probes = r.u32()?;
        if !(1..=self.max_probes).contains(&probes) {
            return Err(DecodeError::Invalid("probe count out of range"));
        }
        let count = r.u64()?;
        if count == 0 {
            return Err(DecodeError::Invalid("zero blocks"));
        }
        let count = usize::try_from(count)
            .ok()
            .filter(|&c| c <= self.max_blocks())
            .ok_or(DecodeError::Invalid("block count too large"))?;
        // Cannot overflow: count ≤ max_blocks keeps the product below u32::MAX.
        let len = count * self.block_bytes;
        if r.remaining() != len {
            return Err(DecodeError::Invalid(
                "block count disagrees with payload length",
            ));
        }
        Ok((probes, r.bytes(len)?))
    }
}

/// `bits_per_key` if finite and positive, else `InvalidParameter`.
pub(crate) fn check_bits_per_key(bits_per_key: f64) -> Result<f64> {
    if bits_per_key.is_finite() && bits_per_key > 0.0 {
        Ok(bits_per_key)
    } else {
        Err(Error::InvalidParameter(format!(
            "bits per key {bits_per_key} is not finite and positive"
        )))
    }
}

/// How a filter's `may_contain` tests a block, chosen from the CPU's
/// features when the filter is made (built or decoded), so that queries do
/// not check them again: std's cached feature test, run per query, made a
/// negative query at 1M keys take 5.5 ns instead of 4. Every filter of a
/// process holds the same value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QueryPath {
    /// The portable loop.
    Scalar,
    /// The kind's AVX2 kernel; only chosen where the CPU runs AVX2.
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl QueryPath {
    /// [`Avx2`](Self::Avx2) where this CPU runs AVX2: known at compile time
    /// when the crate is built with AVX2 enabled, else std's detection.
    pub(crate) fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        if cfg!(target_feature = "avx2") || std::arch::is_x86_feature_detected!("avx2") {
            return Self::Avx2;
        }
        Self::Scalar
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CACHE_LINE: BlockArray = BlockArray {
        block_bytes: 64,
        max_probes: 24,
    };

    #[test]
    fn limits_follow_the_block_size() {
        assert_eq!(CACHE_LINE.block_bits(), 512);
        assert_eq!(CACHE_LINE.max_blocks(), 67_108_863);
        let half = BlockArray {
            block_bytes: 32,
            max_probes: 8,
        };
        assert_eq!(half.max_blocks(), 134_217_727);
    }

    #[test]
    fn sizes_and_refusals() {
        assert_eq!(
            CACHE_LINE.sized(1_000_000, 10.0),
            (19_532, 19_532.0 * 512.0 / 1e6)
        );
        assert_eq!(CACHE_LINE.sized(0, 7.5), (1, 7.5));
        assert!(CACHE_LINE.check_size(u64::MAX, 10.0).is_err());
        assert!(CACHE_LINE.check_size(1, 1e300).is_err());
        assert!(CACHE_LINE.check_size(1, f64::NAN).is_err());
        let max = CACHE_LINE.max_blocks() as u64;
        assert!(CACHE_LINE.check_size(max, 512.0).is_ok());
        assert!(CACHE_LINE.check_size(max + 1, 512.0).is_err());
        // The builders' path caps instead of failing.
        assert_eq!(CACHE_LINE.sized(u64::MAX, 10.0).0, CACHE_LINE.max_blocks());
    }
}
