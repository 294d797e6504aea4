//! Baseline: `xorf` 0.13 `BinaryFuse8`, a static binary fuse filter with
//! 8-bit fingerprints (Graf & Lemire 2022): about 9 bits/key, FPR 2^-8.

use super::{Built, Contender, Params, xxh3_64};
use crate::filters::keys::Key;
use xorf::Filter as _;

/// FPR of an 8-bit fingerprint filter: one in 2^8 fingerprints matches.
const FINGERPRINT_FPR: f64 = 1.0 / 256.0;

/// Collects XXH3-64 of every key, then `BinaryFuse8::try_from(&hashes)`;
/// queried with `contains(&xxh3_64(key))` (the crate takes only u64 keys).
pub struct BinaryFuse8;

struct Filter(xorf::BinaryFuse8);

impl Contender for BinaryFuse8 {
    fn name(&self) -> &'static str {
        "xorf-bfuse8"
    }

    fn ours(&self) -> bool {
        false
    }

    fn notes(&self, _: &Params) -> String {
        "xorf::BinaryFuse8::try_from(&[xxh3-64 of each key]); contains(&xxh3-64); \
         bits/key fixed by design"
            .to_owned()
    }

    fn build(&self, keys: &[Key], _: &Params) -> anyhow::Result<Box<dyn Built>> {
        let hashes: Vec<u64> = keys.iter().map(xxh3_64).collect();
        let inner = xorf::BinaryFuse8::try_from(&hashes)
            .map_err(|e| anyhow::anyhow!("BinaryFuse8 construction failed: {e}"))?;
        Ok(Box::new(Filter(inner)))
    }
}

impl Built for Filter {
    #[inline]
    fn contains(&self, key: &Key) -> bool {
        self.0.contains(&xxh3_64(key))
    }

    fn size_bytes(&self) -> usize {
        self.0.fingerprints.len() + std::mem::size_of_val(&self.0.descriptor)
    }

    fn expected_fpr(&self) -> Option<f64> {
        Some(FINGERPRINT_FPR)
    }
}
