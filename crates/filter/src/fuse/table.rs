//! [`Table`]: what an XOR or binary fuse filter holds, its query, and its
//! encoding body; generic over the fingerprint width and the layout.
#![deny(clippy::indexing_slicing)]

use super::build::MAX_SEEDS;
use super::fingerprint::{Fingerprint, bytes_of};
use super::hashing::SlotHasher;
use super::layout::Layout;
use crate::codec::{self, Writer};
use crate::error::DecodeError;
use crate::hash::KeyHash;
use crate::math;

/// A built (or decoded) filter: the seed that peeled, the key count, the
/// layout and one fingerprint per slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Table<F, L> {
    seed: u32,
    num_keys: u64,
    layout: L,
    hasher: SlotHasher,
    fingerprints: Vec<F>,
}

impl<F: Fingerprint, L: Layout> Table<F, L> {
    /// Assembles a table; `fingerprints.len()` must be `layout.slots()`.
    pub(super) fn from_parts(seed: u32, num_keys: u64, layout: L, fingerprints: Vec<F>) -> Self {
        Self {
            seed,
            num_keys,
            layout,
            hasher: SlotHasher::new(seed),
            fingerprints,
        }
    }

    /// The filter of no keys: it rejects everything.
    pub(super) fn empty() -> Self {
        Self::from_parts(0, 0, L::empty(), Vec::new())
    }

    /// The seed number that peeled.
    pub(super) fn seed(&self) -> u32 {
        self.seed
    }

    pub(super) fn layout(&self) -> &L {
        &self.layout
    }

    /// The query: three loads, two XORs and a compare. The slots are below
    /// the array's length by construction (and by the decoder's checks), so
    /// the bounds checks are never taken; only the empty filter, whose array
    /// has no slots, answers from the fallback arm.
    #[inline]
    pub(super) fn may_contain(&self, hash: KeyHash) -> bool {
        let [a, b, c] = self.layout.positions(self.hasher.place(hash));
        let f = &self.fingerprints;
        match (f.get(a), f.get(b), f.get(c)) {
            (Some(&a), Some(&b), Some(&c)) => a ^ b ^ c == F::of(hash.hi()),
            _ => !f.is_empty(),
        }
    }

    /// Starts loading the three slots of `hash`.
    #[inline]
    pub(super) fn prefetch(&self, hash: KeyHash) {
        for p in self.layout.positions(self.hasher.place(hash)) {
            if let Some(slot) = self.fingerprints.get(p) {
                crate::prefetch::line(slot);
            }
        }
    }

    pub(super) fn size_bytes(&self) -> usize {
        std::mem::size_of_val(self.fingerprints.as_slice())
    }

    /// Keys per slot.
    pub(super) fn fill_ratio(&self) -> f64 {
        match self.fingerprints.len() {
            0 => 0.0,
            slots => self.num_keys as f64 / slots as f64,
        }
    }

    /// `2^-bits`, or 0 for the empty filter.
    pub(super) fn fpr(&self) -> f64 {
        if self.fingerprints.is_empty() {
            0.0
        } else {
            math::xor_family_fpr(u32::from(F::BITS))
        }
    }

    /// The distinct keys built from.
    pub(super) fn num_keys(&self) -> u64 {
        self.num_keys
    }

    pub(super) fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(F::BITS).u32(self.seed).u64(self.num_keys);
        self.layout.write(&mut w);
        F::write_all(&self.fingerprints, &mut w);
        codec::seal(L::KIND, w)
    }

    /// Reads an encoding of this width and layout; every field is checked
    /// against the others and against the payload length.
    pub(super) fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = codec::open(bytes, L::KIND)?;
        if r.u8()? != F::BITS {
            return Err(DecodeError::Invalid(
                "fingerprint width differs from the decoder's",
            ));
        }
        let seed = r.u32()?;
        let num_keys = r.u64()?;
        let layout = L::read(&mut r)?;
        if seed >= MAX_SEEDS {
            return Err(DecodeError::Invalid("XOR-family seed out of range"));
        }
        let slots = layout.slots();
        if num_keys > slots || (num_keys == 0) != (slots == 0) {
            return Err(DecodeError::Invalid(
                "XOR-family key count disagrees with the slots",
            ));
        }
        let count = usize::try_from(slots)
            .map_err(|_| DecodeError::Invalid("XOR-family slot count too large"))?;
        let fingerprints = F::read_all(&mut r, count)?;
        r.finish()?;
        Ok(Self::from_parts(seed, num_keys, layout, fingerprints))
    }
}

/// Body bytes before the fingerprints: width, seed, key count and the
/// layout's fields.
pub(super) fn body_prefix_bytes<L: Layout>() -> u64 {
    let mut w = Writer::new();
    L::empty().write(&mut w);
    1 + 4 + 8 + w.into_bytes().len() as u64
}

/// Whether a table of `layout` with `F` fingerprints fits the envelope's
/// `u32` body length.
pub(super) fn fits<F: Fingerprint, L: Layout>(layout: &L) -> bool {
    layout
        .slots()
        .checked_mul(bytes_of::<F>())
        .and_then(|b| b.checked_add(body_prefix_bytes::<L>()))
        .is_some_and(|b| b <= u64::from(u32::MAX))
}

/// Implements [`XorFamily`](super::XorFamily) and [`Filter`](crate::Filter)
/// for a public filter type `$name<F>` that wraps a `Table<F, $layout>` in
/// its field `table`: every query and figure is the table's.
macro_rules! filter_over_table {
    ($name:ident, $layout:ty) => {
        impl<F: Fingerprint> XorFamily for $name<F> {
            const KIND: FilterKind = <$layout as Layout>::KIND;
            const FINGERPRINT_BITS: u8 = F::BITS;

            fn build(hashes: &mut Vec<KeyHash>) -> Result<Self> {
                build::build(hashes).map(|table| Self { table })
            }

            fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
                Self::decode(bytes)
            }
        }

        impl<F: Fingerprint> Filter for $name<F> {
            #[inline]
            fn may_contain(&self, hash: KeyHash) -> bool {
                self.table.may_contain(hash)
            }

            #[inline]
            fn prefetch(&self, hash: KeyHash) {
                self.table.prefetch(hash);
            }

            fn size_bytes(&self) -> usize {
                self.table.size_bytes()
            }

            /// Keys per slot.
            fn fill_ratio(&self) -> f64 {
                self.table.fill_ratio()
            }

            /// `2^-bits`; 0 for the empty filter.
            fn estimated_fpr(&self) -> f64 {
                self.table.fpr()
            }

            /// Exact: the distinct hashes built from.
            fn estimated_count(&self) -> Option<f64> {
                Some(self.table.num_keys() as f64)
            }

            fn encode(&self) -> Vec<u8> {
                self.table.encode()
            }
        }
    };
}
pub(super) use filter_over_table;
