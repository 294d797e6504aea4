//! Baselines: `xorf` 0.13 `BinaryFuse8` and `BinaryFuse16`, static binary
//! fuse filters with 8- and 16-bit fingerprints (Graf & Lemire 2022): about
//! 9 and 18 bits/key, FPR 2^-8 and 2^-16; and its `Xor8` (Graf & Lemire
//! 2020), about 9.84 bits/key at 2^-8.

use super::{Built, Contender, Params, Prehashed, count_hits, xxh3_64};
use crate::filters::keys::KeySet;

/// Collects XXH3-64 of every key, then `BinaryFuse8::try_from(&hashes)`;
/// queried with `contains(&xxh3_64(key))` (the crate takes only u64 keys).
pub struct BinaryFuse8;

/// As [`BinaryFuse8`] with 16-bit fingerprints.
pub struct BinaryFuse16;

/// Collects XXH3-64 of every key, then `Xor8::from(&hashes)`; queried
/// with `contains(&xxh3_64(key))`.
pub struct Xor8;

/// A built fuse filter of either width.
struct Filter<F>(F);

/// What the two widths differ in.
trait Fuse: xorf::Filter<u64> + for<'a> TryFrom<&'a Vec<u64>, Error = &'static str> + 'static {
    const NAME: &'static str;
    const FINGERPRINT_BITS: i32;
    fn data_bytes(&self) -> usize;
}

impl Fuse for xorf::BinaryFuse8 {
    const NAME: &'static str = "BinaryFuse8";
    const FINGERPRINT_BITS: i32 = 8;
    fn data_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.fingerprints) + std::mem::size_of_val(&self.descriptor)
    }
}

impl Fuse for xorf::BinaryFuse16 {
    const NAME: &'static str = "BinaryFuse16";
    const FINGERPRINT_BITS: i32 = 16;
    fn data_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.fingerprints) + std::mem::size_of_val(&self.descriptor)
    }
}

fn notes<F: Fuse>() -> String {
    format!(
        "xorf::{}::try_from(&[xxh3-64 of each key]); contains(&xxh3-64); bits/key fixed by design",
        F::NAME
    )
}

fn build<F: Fuse>(keys: &KeySet) -> anyhow::Result<Box<dyn Built>> {
    let hashes: Vec<u64> = keys.iter().map(xxh3_64).collect();
    let inner = F::try_from(&hashes)
        .map_err(|e| anyhow::anyhow!("{} construction failed: {e}", F::NAME))?;
    Ok(Box::new(Filter(inner)))
}

impl Contender for BinaryFuse8 {
    fn name(&self) -> &'static str {
        "xorf-bfuse8"
    }

    fn ours(&self) -> bool {
        false
    }

    fn notes(&self, _: &Params) -> String {
        notes::<xorf::BinaryFuse8>()
    }

    fn build(&self, keys: &KeySet, _: &Params) -> anyhow::Result<Box<dyn Built>> {
        build::<xorf::BinaryFuse8>(keys)
    }
}

impl Contender for BinaryFuse16 {
    fn name(&self) -> &'static str {
        "xorf-bfuse16"
    }

    fn ours(&self) -> bool {
        false
    }

    fn notes(&self, _: &Params) -> String {
        notes::<xorf::BinaryFuse16>()
    }

    fn build(&self, keys: &KeySet, _: &Params) -> anyhow::Result<Box<dyn Built>> {
        build::<xorf::BinaryFuse16>(keys)
    }
}

impl<F: Fuse> Built for Filter<F> {
    #[inline]
    fn contains(&self, key: &[u8]) -> bool {
        self.0.contains(&xxh3_64(key))
    }

    fn count_prehashed(&self, hashes: &Prehashed) -> Option<u64> {
        Some(count_hits(&hashes.xxh3_64, |h| self.0.contains(&h)))
    }

    fn size_bytes(&self) -> usize {
        self.0.data_bytes()
    }

    /// One in `2^bits` fingerprints matches.
    fn expected_fpr(&self) -> Option<f64> {
        Some(2f64.powi(-F::FINGERPRINT_BITS))
    }
}

impl Contender for Xor8 {
    fn name(&self) -> &'static str {
        "xorf-xor8"
    }

    fn ours(&self) -> bool {
        false
    }

    fn notes(&self, _: &Params) -> String {
        "xorf::Xor8::from(&[xxh3-64 of each key]); contains(&xxh3-64); bits/key fixed by design"
            .to_string()
    }

    fn build(&self, keys: &KeySet, _: &Params) -> anyhow::Result<Box<dyn Built>> {
        let hashes: Vec<u64> = keys.iter().map(xxh3_64).collect();
        Ok(Box::new(Xor8Filter(xorf::Xor8::from(&hashes))))
    }
}

/// A built `xorf::Xor8`.
struct Xor8Filter(xorf::Xor8);

impl Built for Xor8Filter {
    #[inline]
    fn contains(&self, key: &[u8]) -> bool {
        xorf::Filter::contains(&self.0, &xxh3_64(key))
    }

    fn count_prehashed(&self, hashes: &Prehashed) -> Option<u64> {
        Some(count_hits(&hashes.xxh3_64, |h| {
            xorf::Filter::contains(&self.0, &h)
        }))
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.0.fingerprints)
    }

    /// One in 2^8 fingerprints matches.
    fn expected_fpr(&self) -> Option<f64> {
        Some(2f64.powi(-8))
    }
}
