//! One 256-bit block and the bits a key sets in it.
//!
//! A block is 8 lanes of 32 bits. A key with `k ≤ 8` probes sets one bit
//! in each of `k` consecutive lanes, cyclically from lane `r`: its
//! *window*. Both the window and the bits come straight from `hash.hi()`,
//! with no arithmetic beyond shifts:
//! - `r` is bits 0..3 of `hi`;
//! - lane `j`'s bit is bits `8j+3 .. 8j+8` of `hi`, the top 5 bits of its
//!   byte `j`.
//!
//! The block index reads `hash.lo()` (see `mod.rs`), so the three choices
//! use disjoint hash bits. Each lane takes its bit from its own byte, so
//! the bits of one key are independent and uniform within their lanes.
//!
//! Why a window: with one bit per lane and fewer than 8 probes, lanes
//! `k..8` of a fixed window would never be set. Rotating the window by
//! `r` spreads every key's bits over the whole block, so any `k` from 1 to
//! 8 uses all 256 bits. With `k = 8` the window is the whole block and `r`
//! is moot: Parquet's split-block layout.
//!
//! A query masks the lanes of its window with a row of [`WINDOWS`] (1 in
//! the window's lanes, 0 elsewhere) shifted by each lane's bit, and asks
//! whether the block holds every bit of that mask: the same 8-lane
//! arithmetic for every `k`, scalar here and in one AVX2 register in
//! `avx2.rs`.
#![deny(clippy::indexing_slicing)]

use crate::hash::KeyHash;

/// Bits per block: half a cache line, one AVX2 register.
pub(super) const BLOCK_BITS: u32 = 256;
/// Bytes per block, in memory and in the encoding.
pub(super) const BLOCK_BYTES: usize = 32;
/// 32-bit lanes per block; a key sets at most one bit in each.
pub(super) const LANES: usize = 8;
/// The most probes a key can set: one per lane.
pub(super) const MAX_PROBES: u32 = LANES as u32;

/// One lane's share of a mask: 1 for a lane in the window, 0 outside.
pub(super) type Lanes = [u32; LANES];

/// `WINDOWS[k][r]`: the window of `k` lanes starting at lane `r`.
/// `WINDOWS[0]` is all zeros (no probes: every key is present).
pub(super) static WINDOWS: Windows = Windows(windows());

/// The table, aligned so that each row is one aligned 32-byte load.
#[repr(C, align(32))]
pub(super) struct Windows(pub(super) [[Lanes; LANES]; LANES + 1]);

#[expect(clippy::indexing_slicing, reason = "k ≤ 8, r < 8, lane < 8")]
const fn windows() -> [[Lanes; LANES]; LANES + 1] {
    let mut out = [[[0; LANES]; LANES]; LANES + 1];
    let mut k = 0;
    while k <= LANES {
        let mut r = 0;
        while r < LANES {
            let mut j = 0;
            while j < k {
                out[k][r][(r + j) % LANES] = 1;
                j += 1;
            }
            r += 1;
        }
        k += 1;
    }
    out
}

/// The first lane of a key's window: bits 0..3 of `hash.hi()`.
#[inline]
pub(super) const fn window_start(hash: KeyHash) -> usize {
    (hash.hi() & 7) as usize
}

/// The bit lane `lane` tests: the top 5 bits of byte `lane` of `hash.hi()`.
#[inline]
const fn lane_bit(hi: u64, lane: usize) -> u32 {
    ((hi >> (8 * lane + 3)) & 31) as u32
}

/// 256 bits, aligned to 32 bytes, so a block never straddles a cache line.
/// Lane `j` holds bits `32j .. 32j+32`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(32))]
pub(super) struct Block(pub(super) Lanes);

impl Block {
    /// Reads 32 little-endian bytes (8 lanes).
    pub(super) fn from_le_bytes(bytes: &[u8]) -> Self {
        let mut block = Self::default();
        for (lane, chunk) in block.0.iter_mut().zip(bytes.chunks_exact(4)) {
            let mut le = [0; 4];
            le.copy_from_slice(chunk);
            *lane = u32::from_le_bytes(le);
        }
        block
    }

    /// The block as 4 little-endian `u64` words (lanes `2i` and `2i+1`),
    /// whose bytes are the 8 lanes' little-endian bytes in order.
    pub(super) fn words(&self) -> [u64; LANES / 2] {
        let mut words = [0; LANES / 2];
        for (word, pair) in words.iter_mut().zip(self.0.chunks_exact(2)) {
            if let [low, high] = *pair {
                *word = u64::from(low) | u64::from(high) << 32;
            }
        }
        words
    }

    /// Set bits in the block.
    pub(super) fn count_ones(&self) -> u32 {
        self.0.iter().map(|lane| lane.count_ones()).sum()
    }

    /// Set bits in each lane.
    pub(super) fn lane_ones(&self) -> [u32; LANES] {
        self.0.map(u32::count_ones)
    }

    /// Sets the bits of `hash` in the lanes of `window`.
    #[inline]
    pub(super) fn insert(&mut self, hash: KeyHash, window: &Lanes) {
        let hi = hash.hi();
        for (lane, (word, &on)) in self.0.iter_mut().zip(window).enumerate() {
            *word |= on << lane_bit(hi, lane);
        }
    }

    /// Whether every bit of `hash` in the lanes of `window` is set. The
    /// portable query: every lane is tested, without a branch on the bits
    /// read (see the blocked Bloom's `Block::contains` for why).
    #[inline]
    pub(super) fn contains(&self, hash: KeyHash, window: &Lanes) -> bool {
        let hi = hash.hi();
        let missing = self
            .0
            .iter()
            .zip(window)
            .enumerate()
            .fold(0, |missing, (lane, (&word, &on))| {
                missing | (!word & (on << lane_bit(hi, lane)))
            });
        missing == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_cyclic_runs() {
        assert_eq!(WINDOWS.0[0], [[0; LANES]; LANES]);
        assert_eq!(WINDOWS.0[3][0], [1, 1, 1, 0, 0, 0, 0, 0]);
        assert_eq!(WINDOWS.0[3][6], [1, 0, 0, 0, 0, 0, 1, 1]);
        assert_eq!(WINDOWS.0[8][5], [1; LANES]);
        for k in 0..=LANES {
            for r in 0..LANES {
                assert_eq!(WINDOWS.0[k][r].iter().sum::<u32>(), k as u32);
            }
        }
        assert_eq!(std::mem::align_of::<Windows>(), 32);
    }

    #[test]
    fn bits_come_from_the_top_of_each_byte() {
        // Byte j of hi is 0x08·(j+1) + j: top 5 bits j+1, low 3 bits j.
        let hi = u64::from_le_bytes(std::array::from_fn(|j| 8 * (j as u8 + 1) + j as u8));
        let hash = KeyHash::from_parts(0, hi);
        assert_eq!(window_start(hash), 0);
        let mut block = Block::default();
        block.insert(hash, &WINDOWS.0[8][0]);
        assert_eq!(block.0, std::array::from_fn(|j| 1 << (j + 1)));
        // Three probes from lane 6 (hi's low 3 bits become 6): lanes 6, 7, 0.
        let hash = KeyHash::from_parts(0, (hi & !7) | 6);
        let window = &WINDOWS.0[3][window_start(hash)];
        let mut block = Block::default();
        block.insert(hash, window);
        assert_eq!(block.0, [1 << 1, 0, 0, 0, 0, 0, 1 << 7, 1 << 8]);
        assert!(block.contains(hash, window));
        block.0[7] = 0;
        assert!(!block.contains(hash, window));
        assert!(!block.contains(hash, &WINDOWS.0[2][window_start(hash)]));
        assert!(
            Block::default().contains(hash, &WINDOWS.0[0][0]),
            "no probes: present"
        );
    }

    #[test]
    fn le_bytes_words_and_alignment() {
        let bytes: Vec<u8> = (0..32).collect();
        let block = Block::from_le_bytes(&bytes);
        assert_eq!(block.0[0], 0x0302_0100);
        assert_eq!(block.0[7], 0x1f1e_1d1c);
        let words = block.words();
        let round: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(round, bytes);
        assert_eq!(
            block.count_ones(),
            bytes.iter().map(|b| b.count_ones()).sum()
        );
        assert_eq!(std::mem::align_of::<Block>(), BLOCK_BYTES);
        assert_eq!(std::mem::size_of::<Block>(), BLOCK_BYTES);
    }
}
