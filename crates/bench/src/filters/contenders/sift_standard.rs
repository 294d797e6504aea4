//! Sift's `StandardBloom` at `--bits-per-key` with the optimal probe count.

use super::sift::SiftBuilt;
use super::{Built, Contender, Params};
use crate::filters::keys::KeySet;
use sift_filter::{BloomShape, KeyHash, StandardBloom, math};

/// `StandardBloom::new(BloomShape::for_bits_per_key(n, bpk))`, then `insert`.
pub struct SiftStandard;

impl Contender for SiftStandard {
    fn name(&self) -> &'static str {
        "sift-standard"
    }

    fn ours(&self) -> bool {
        true
    }

    fn notes(&self, p: &Params) -> String {
        let shape = BloomShape::for_bits_per_key(p.n as u64, p.bits_per_key);
        format!(
            "StandardBloom::new(BloomShape::for_bits_per_key(n, {})): k = {}; KeyHash::of per key",
            p.bits_per_key, shape.probes
        )
    }

    fn sized_by_bits(&self) -> bool {
        true
    }

    fn build(&self, keys: &KeySet, p: &Params) -> anyhow::Result<Box<dyn Built>> {
        let shape = BloomShape::for_bits_per_key(keys.len() as u64, p.bits_per_key);
        let mut filter = StandardBloom::new(shape)?;
        for key in keys.iter() {
            filter.insert(KeyHash::of(key));
        }
        Ok(SiftBuilt::boxed(filter, keys.len(), |f, n| {
            let s = f.shape();
            Some(math::bloom_fpr(s.bits, n, s.probes))
        }))
    }
}
