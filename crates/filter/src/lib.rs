//! # sift-filter
//!
//! The membership filters of the Sift LSM store. Pure data structures: no
//! I/O, no threads of their own.
//!
//! Every filter is fed the same [`KeyHash`], the 128-bit XXH3 of a key,
//! computed once per lookup and shared by every filter the lookup meets.
//!
//! | filter | use |
//! |---|---|
//! | [`StandardBloom`] | reference Bloom; OR-able value filters ([`StandardBloom::union`]) |
//! | [`BlockedBloom`] | default SSTable key filter: one 512-bit cache line per query |
//! | [`SplitBlockBloom`] | the fastest Bloom query (one bit per 32-bit lane of a 256-bit block), for hot levels |
//! | [`Ribbon`] | static key filters of long-lived levels, ~30% smaller than Bloom |
//! | [`BinaryFuseFilter`] | static key sets: 9.04 bits/key at FPR `2^-8` ([`BinaryFuse8`], 1M keys), 18.1 at `2^-16` ([`BinaryFuse16`]) |
//! | [`XorFilter`] | static key sets: 9.84 bits/key at `2^-8` ([`Xor8`]), 19.7 at `2^-16` ([`Xor16`]) |
//! | [`CountingBloom`] | deletable sets (4-bit saturating counters) |
//! | [`CuckooFilter`] | deletable sets at low FPR |
//! | [`ScalableBloom`] | sets of unknown size |
//! | [`PartitionedBloom`] | one probe per partition of the bit array |
//! | [`AtomicBloom`] | lock-free concurrent inserts |
//! | [`RangeFilter`] | `u64` range emptiness (Grafite): FPR `≤ ℓ / 2^{B-2}` for any keys |
//!
//! All but [`RangeFilter`] implement [`Filter`]; static kinds are built
//! through a [`FilterBuilder`]. [`RangeFilter`] takes `u64` keys and
//! answers ranges of them, so it has its own interface. Sizing formulas
//! live in [`math`]. Every kind has a self-describing, checksummed
//! encoding whose decoder never panics; [`AnyFilter`] decodes whichever
//! key filter a byte string holds.

pub mod codec;
pub mod math;

mod any;
mod atomic;
mod bits;
mod block_array;
mod blocked;
mod counting;
mod cuckoo;
mod error;
mod filter;
mod fuse;
mod hash;
mod partitioned;
mod prefetch;
mod probe;
mod range;
mod ribbon;
mod scalable;
mod split;
mod standard;

pub use any::AnyFilter;
pub use atomic::AtomicBloom;
pub use blocked::{BlockedBloom, BlockedBloomBuilder};
pub use codec::FilterKind;
pub use counting::CountingBloom;
pub use cuckoo::CuckooFilter;
pub use error::{DecodeError, Error, Result};
pub use filter::{Filter, FilterBuilder};
pub use fuse::{
    BinaryFuse8, BinaryFuse16, BinaryFuseBuilder, BinaryFuseFilter, Fingerprint, Xor8, Xor16,
    XorBuilder, XorFamily, XorFamilyBuilder, XorFilter, XorOrBloom,
};
pub use hash::{HashKind, KeyHash, fastrange32, fastrange64, mix64};
pub use partitioned::PartitionedBloom;
pub use probe::DoubleHashing;
pub use range::RangeFilter;
pub use ribbon::{Ribbon, RibbonBuilder, StaticFilter};
pub use scalable::ScalableBloom;
pub use split::{SplitBlockBloom, SplitBlockBloomBuilder};
pub use standard::{BloomShape, StandardBloom};
