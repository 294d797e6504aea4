//! Sift's `CuckooFilter`: 4-slot buckets of 12-bit fingerprints, sized by
//! the filter itself for ~95% load.

use super::sift::SiftBuilt;
use super::{Built, Contender, Params};
use crate::filters::keys::KeySet;
use sift_filter::{CuckooFilter, KeyHash};

/// Fingerprint bits: the project's cuckoo target (FPR ≤ 0.2% at ≥ 90% load).
const FINGERPRINT_BITS: u32 = 12;
/// Slots a query compares: two buckets of four.
const SLOTS_PER_QUERY: f64 = 8.0;

/// `CuckooFilter::new(n, 12)`, then `insert` per key (an insert that finds
/// no slot fails the build: the filter never drops a key).
pub struct SiftCuckoo;

impl Contender for SiftCuckoo {
    fn name(&self) -> &'static str {
        "sift-cuckoo"
    }

    fn ours(&self) -> bool {
        true
    }

    fn notes(&self, _: &Params) -> String {
        format!("CuckooFilter::new(n, {FINGERPRINT_BITS}) (sized for ~95% load), insert per key")
    }

    fn build(&self, keys: &KeySet, _: &Params) -> anyhow::Result<Box<dyn Built>> {
        let mut filter = CuckooFilter::new(keys.len(), FINGERPRINT_BITS)?;
        for key in keys.iter() {
            filter.insert(KeyHash::of(key))?;
        }
        Ok(SiftBuilt::described(
            filter,
            keys.len(),
            |f, _| {
                // Each of the 8 slots is occupied with probability `load`
                // and matches a non-zero f-bit fingerprint with 1/(2^f - 1).
                let load = f.len() as f64 / f.capacity().max(1) as f64;
                let q = 1.0 / ((1u64 << f.fingerprint_bits()) - 1) as f64;
                Some(1.0 - (1.0 - q).powf(SLOTS_PER_QUERY * load))
            },
            |f| {
                format!(
                    "{}-bit fingerprints, load {:.3}",
                    f.fingerprint_bits(),
                    f.len() as f64 / f.capacity().max(1) as f64
                )
            },
        ))
    }
}
