//! The XOR family of static filters: XOR filters (Graf & Lemire 2020,
//! "Xor Filters: Faster and Smaller Than Bloom and Cuckoo Filters") and
//! 3-wise binary fuse filters (Graf & Lemire 2022, "Binary Fuse Filters:
//! Fast and Smaller Than Xor Filters"), with 8- or 16-bit fingerprints.
//!
//! Both store one fingerprint per slot such that each key's three slots
//! XOR to its own fingerprint; a query is three loads, two XORs and a
//! compare. They differ only in where the three slots are: one per block
//! of three equal blocks (XOR, `1.23·n + 32` slots), or one per segment of
//! three consecutive power-of-two segments (binary fuse, `1.125·n` slots
//! from a million keys on). Construction peels the keys (a slot used by one
//! key goes to that key) under up to 32 seeds, then fails with
//! `Error::ConstructionFailed`: the caller builds a Bloom filter instead.
//!
//! Files, in the order a build runs:
//!
//! | file | role |
//! |---|---|
//! | `fingerprint.rs` | the sealed [`Fingerprint`] trait: `u8`, `u16` |
//! | `hashing.rs` | key hash + seed → the placing hash `x`; the fingerprint |
//! | `layout.rs` | blocks (XOR) or segments (fuse): `x` → three slots |
//! | `placed.rs` | keys placed under a seed, ordered by first slot |
//! | `peel.rs` | peeling, then assignment in reverse order |
//! | `build.rs` | seeds tried in turn; duplicates removed on failure |
//! | `table.rs` | the shared filter state, query and encoding body |
//! | `xor_filter.rs`, `binary_fuse.rs` | the two public filter types |
//! | `builder.rs` | [`XorFamilyBuilder`]: build, or fall back to Bloom |
//! | `fallback.rs` | [`XorOrBloom`], what the builder finishes with |
//!
//! Sizes are pure functions in [`math`](crate::math) (`xor_block_length`,
//! `binary_fuse_segment_length`, ...).
//!
//! Encoding body (little-endian), after the common envelope; kind 10
//! (XOR) or 11 (binary fuse):
//!
//! ```text
//! u8   bits          fingerprint width: 8 or 16
//! u32  seed          seed number that peeled (< 32)
//! u64  keys          distinct keys; 0 exactly when there are no slots
//! (kind 10) u64 block_len       slots per block; slots = 3 · block_len
//! (kind 11) u8  log2_len        segment length 2^log2_len, ≤ 18
//!           u64 segments        start segments c; slots = (c + 2) · 2^log2_len,
//!                               0 when c = 0 (then log2_len = 0)
//! fingerprints[slots], bits/8 bytes each
//! ```

mod binary_fuse;
mod build;
mod builder;
mod fallback;
mod fingerprint;
mod hashing;
mod layout;
mod peel;
mod placed;
mod table;
mod xor_filter;

pub use binary_fuse::{BinaryFuse8, BinaryFuse16, BinaryFuseFilter};
pub use builder::{BinaryFuseBuilder, XorBuilder, XorFamilyBuilder};
pub use fallback::XorOrBloom;
pub use fingerprint::Fingerprint;
pub use xor_filter::{Xor8, Xor16, XorFilter};

use crate::codec::{FilterKind, Reader};
use crate::error::{DecodeError, Result};
use crate::filter::Filter;
use crate::hash::KeyHash;

mod sealed {
    /// Keeps [`XorFamily`](super::XorFamily) to this module's two filters.
    pub trait Sealed {}
    impl<F: super::Fingerprint> Sealed for super::XorFilter<F> {}
    impl<F: super::Fingerprint> Sealed for super::BinaryFuseFilter<F> {}
}

/// [`XorFilter`] and [`BinaryFuseFilter`], of either width: what an
/// [`XorFamilyBuilder`] builds. Sealed.
pub trait XorFamily: Filter + Sized + sealed::Sealed {
    /// The kind their encodings have.
    const KIND: FilterKind;
    /// Bits per fingerprint.
    const FINGERPRINT_BITS: u8;

    /// Builds from `hashes`, deduplicating them in place if needed.
    #[doc(hidden)]
    fn build(hashes: &mut Vec<KeyHash>) -> Result<Self>;

    /// Reads an encoding of this kind and width.
    fn decode(bytes: &[u8]) -> Result<Self, DecodeError>;
}

/// The fingerprint width of an XOR-family encoding (kind 10 or 11): the
/// first body byte, read without checking the rest (the decoder of that
/// width checks everything).
pub(crate) fn peek_width(bytes: &[u8]) -> Result<u8, DecodeError> {
    let mut r = Reader::new(bytes);
    r.bytes(crate::codec::HEADER_LEN)?;
    r.u8()
}
