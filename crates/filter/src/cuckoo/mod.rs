//! The cuckoo filter (Fan, Andersen, Kaminsky & Mitzenmacher 2014): a
//! deletable set that stores a short fingerprint of each key in one of two
//! buckets, reaching lower FPRs than a counting Bloom filter in less space.

mod path;
mod table;

use crate::codec::{self, FilterKind, Writer};
use crate::error::{DecodeError, Error, Result};
use crate::filter::Filter;
use crate::hash::{KeyHash, fastrange64, mix64};
use table::{EMPTY, SLOTS, Table};

/// The load [`CuckooFilter::new`] sizes for: 95%, what Fan et al. (2014,
/// Table 2) reach with 4-slot buckets.
const TARGET_LOAD_PERCENT: usize = 95;

/// A cuckoo filter: buckets of 4 slots holding `f`-bit fingerprints.
///
/// **Placement.** Key hash `h` has fingerprint
/// `fp = fastrange(h.hi, 2^f - 1) + 1`, uniform over the non-zero `f`-bit
/// values (0 marks an empty slot), and buckets `i1 = fastrange(h.lo, B)`
/// and `i2 = alt(i1, fp)` with `alt(i, fp) = (H(fp) - i) mod B`, where
/// `H(fp) = fastrange(mix64(fp), B)`.
/// `alt` is an involution for any bucket count `B`, so a stored fingerprint
/// can always find its other bucket from its own bucket and value (partial-
/// key cuckoo hashing), without the power-of-two table that the original
/// `i ⊕ hash(fp)` needs; the table is sized to the capacity asked for, not
/// up to twice that.
///
/// **Inserts** take a free slot of `i1` or `i2`, or else move fingerprints
/// along the shortest chain that ends in a free slot, found before anything
/// moves (see `path.rs`). When no chain is found the insert returns
/// [`Error::Full`] and the filter is exactly as before: nothing is ever
/// dropped. A key can be inserted up to 8 times (its two buckets); the
/// filter is then a multiset, and each copy is removed separately.
///
/// **Removes** delete one copy of `fp` from `i1` or `i2`. Keys with the same
/// fingerprint and the same `i1` share both buckets, so removing one never
/// takes another key's only copy, provided the key removed was inserted.
/// Removing a key that was never inserted but whose fingerprint is found
/// (a false positive) deletes another key's fingerprint, which can then
/// become a false negative; no cuckoo filter can detect this.
///
/// **FPR.** A query compares `fp` with the `2·4` slots of its buckets, each
/// occupied with probability `load = len / slots` and matching with
/// probability `q = 1/(2^f - 1)`: `FPR = 1 - (1 - q)^{8·load} ≈ 8·load/2^f`.
/// At 12 bits and 95% load that is 0.19%; the table takes `f / load` bits
/// per key (12.6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CuckooFilter {
    table: Table,
    len: usize,
}

impl CuckooFilter {
    /// Fewest fingerprint bits accepted: at 4 bits the FPR at full load is
    /// already above 40% (`8/(2^f - 1)` expected matches per query), and
    /// each bucket's items can reach only `2^f - 1` alternate buckets.
    pub const MIN_FINGERPRINT_BITS: u32 = 4;
    /// Most fingerprint bits accepted: a slot is read as at most 32 bits.
    pub const MAX_FINGERPRINT_BITS: u32 = 32;

    /// An empty filter with room for at least `capacity` items at ~95% load
    /// (`ceil(capacity / 3.8)` buckets, at least one; small tables may fill
    /// below 95%). `fingerprint_bits` outside `4..=32`, or a table too large
    /// to address, is [`Error::InvalidParameter`].
    pub fn new(capacity: usize, fingerprint_bits: u32) -> Result<Self> {
        if !(Self::MIN_FINGERPRINT_BITS..=Self::MAX_FINGERPRINT_BITS).contains(&fingerprint_bits) {
            return Err(Error::InvalidParameter(format!(
                "fingerprint bits {fingerprint_bits} outside {}..={}",
                Self::MIN_FINGERPRINT_BITS,
                Self::MAX_FINGERPRINT_BITS
            )));
        }
        let too_large = || Error::InvalidParameter(format!("capacity {capacity} is too large"));
        let buckets = capacity
            .checked_mul(100)
            .ok_or_else(too_large)?
            .div_ceil(SLOTS * TARGET_LOAD_PERCENT)
            .max(1);
        let table = Table::new(buckets, fingerprint_bits).ok_or_else(too_large)?;
        Ok(Self { table, len: 0 })
    }

    /// Adds one copy of `hash`. Returns [`Error::Full`] if no slot can be
    /// freed for it; the filter is then unchanged.
    pub fn insert(&mut self, hash: KeyHash) -> Result<()> {
        let (i1, fp) = self.locate(hash);
        let i2 = self.alt(i1, fp);
        for bucket in [i1, i2] {
            if let Some(slot) = self.table.find(bucket, EMPTY) {
                self.table.set(bucket, slot, fp);
                self.len += 1;
                return Ok(());
            }
        }
        let roots: &[usize] = if i1 == i2 { &[i1] } else { &[i1, i2] };
        let path = path::search(&self.table, roots, |bucket, stored| {
            self.alt(bucket, stored)
        })
        .ok_or(Error::Full(
            "no free slot within reach of the key's two buckets",
        ))?;
        path::apply(&mut self.table, &path, fp);
        self.len += 1;
        Ok(())
    }

    /// Removes one copy of `hash`. Returns [`Error::NotPresent`], changing
    /// nothing, if neither of its buckets holds its fingerprint.
    pub fn remove(&mut self, hash: KeyHash) -> Result<()> {
        let (i1, fp) = self.locate(hash);
        for bucket in [i1, self.alt(i1, fp)] {
            if let Some(slot) = self.table.find(bucket, fp) {
                self.table.set(bucket, slot, EMPTY);
                self.len = self.len.saturating_sub(1);
                return Ok(());
            }
        }
        Err(Error::NotPresent)
    }

    /// Fingerprints stored: inserts minus removes, duplicates included.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is stored.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slots in the table: the most fingerprints it can hold. The first
    /// insert fails at 96-98% of it (measured at 12-bit fingerprints).
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.table.slots()
    }

    /// Bits per fingerprint (`f`).
    #[must_use]
    pub fn fingerprint_bits(&self) -> u32 {
        self.table.bits()
    }

    /// Reads an encoding made by [`Filter::encode`]: fingerprint bits (u32),
    /// bucket count (u64), stored count (u64), then the packed table.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = codec::open(bytes, FilterKind::Cuckoo)?;
        let bits = r.u32()?;
        let buckets = r.u64()?;
        let len = r.u64()?;
        if !(Self::MIN_FINGERPRINT_BITS..=Self::MAX_FINGERPRINT_BITS).contains(&bits) {
            return Err(DecodeError::Invalid("fingerprint bits out of range"));
        }
        let buckets =
            usize::try_from(buckets).map_err(|_| DecodeError::Invalid("bucket count too large"))?;
        if buckets == 0 {
            return Err(DecodeError::Invalid("no buckets"));
        }
        let table = Table::decode(&mut r, buckets, bits)?;
        r.finish()?;
        if usize::try_from(len) != Ok(table.occupied()) {
            return Err(DecodeError::Invalid(
                "stored count differs from occupied slots",
            ));
        }
        Ok(Self {
            table,
            len: len as usize,
        })
    }

    /// Bucket `i1` and fingerprint of `hash` (see the type's documentation).
    #[inline]
    fn locate(&self, hash: KeyHash) -> (usize, u32) {
        let bucket = fastrange64(hash.lo(), self.table.buckets() as u64) as usize;
        let nonzero = (1u64 << self.table.bits()) - 1;
        (bucket, fastrange64(hash.hi(), nonzero) as u32 + 1)
    }

    /// The other bucket of `fp` when it is in `bucket`: `(H(fp) - bucket)
    /// mod B`, computed without division.
    #[inline]
    fn alt(&self, bucket: usize, fp: u32) -> usize {
        let buckets = self.table.buckets();
        let h = fastrange64(mix64(u64::from(fp)), buckets as u64) as usize;
        if h >= bucket {
            h - bucket
        } else {
            buckets - (bucket - h)
        }
    }
}

impl Filter for CuckooFilter {
    #[inline]
    fn may_contain(&self, hash: KeyHash) -> bool {
        let (i1, fp) = self.locate(hash);
        self.table.find(i1, fp).is_some() || self.table.find(self.alt(i1, fp), fp).is_some()
    }

    /// The packed table: `ceil(slots · f / 64)` words.
    fn size_bytes(&self) -> usize {
        self.table.size_bytes()
    }

    /// Occupied slots over slots.
    fn fill_ratio(&self) -> f64 {
        self.len as f64 / self.table.slots() as f64
    }

    /// `1 - (1 - 1/(2^f - 1))^{8·load}` (see the type's documentation).
    fn estimated_fpr(&self) -> f64 {
        let per_slot = 1.0 / ((1u64 << self.table.bits()) - 1) as f64;
        let compared = (2 * SLOTS) as f64 * self.fill_ratio();
        -(compared * (-per_slot).ln_1p()).exp_m1()
    }

    /// Exactly the number of fingerprints stored.
    fn estimated_count(&self) -> Option<f64> {
        Some(self.len as f64)
    }

    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u32(self.table.bits())
            .u64(self.table.buckets() as u64)
            .u64(self.len as u64);
        self.table.encode(&mut w);
        codec::seal(FilterKind::Cuckoo, w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alt_is_an_involution_for_any_bucket_count() {
        for capacity in [1, 4, 5, 37, 1_000, 4_096] {
            let f = CuckooFilter::new(capacity, 8).unwrap();
            for bucket in 0..f.table.buckets() {
                for fp in 1..256 {
                    let other = f.alt(bucket, fp);
                    assert!(other < f.table.buckets());
                    assert_eq!(
                        f.alt(other, fp),
                        bucket,
                        "capacity {capacity} bucket {bucket} fp {fp}"
                    );
                }
            }
        }
    }

    #[test]
    fn fingerprints_are_never_empty_and_cover_the_range() {
        for bits in [4, 12, 32] {
            let f = CuckooFilter::new(100, bits).unwrap();
            let max = ((1u64 << bits) - 1) as u32;
            assert_eq!(f.locate(KeyHash::from_parts(0, 0)).1, 1);
            assert_eq!(f.locate(KeyHash::from_parts(0, u64::MAX)).1, max);
        }
    }

    #[test]
    fn sizes_to_the_target_load() {
        let f = CuckooFilter::new(1_000, 12).unwrap();
        assert_eq!(f.table.buckets(), 264); // ceil(1000 / 3.8)
        assert_eq!(f.capacity(), 1_056);
        assert_eq!(f.size_bytes(), (1_056 * 12usize).div_ceil(64) * 8);
        assert_eq!(CuckooFilter::new(0, 12).unwrap().capacity(), 4);
    }

    #[test]
    fn a_key_whose_buckets_coincide_still_works() {
        let mut f = CuckooFilter::new(40, 8).unwrap(); // 11 buckets
        let h = (0..10_000u64)
            .map(|i| KeyHash::of(&i.to_le_bytes()))
            .find(|&h| {
                let (i1, fp) = f.locate(h);
                f.alt(i1, fp) == i1
            })
            .unwrap();
        for _ in 0..4 {
            f.insert(h).unwrap();
        }
        let before = f.clone();
        assert_eq!(
            f.insert(h),
            Err(Error::Full(
                "no free slot within reach of the key's two buckets"
            ))
        );
        assert_eq!(f, before);
        for _ in 0..4 {
            f.remove(h).unwrap();
        }
        assert_eq!(f.remove(h), Err(Error::NotPresent));
        assert!(f.is_empty());
    }
}
