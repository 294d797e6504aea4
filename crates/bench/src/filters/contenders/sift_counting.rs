//! Sift's `CountingBloom`: the standard Bloom shape with 4-bit counters in
//! place of bits, so 4× the memory for the same FPR.

use super::sift::SiftBuilt;
use super::{Built, Contender, Params};
use crate::filters::keys::KeySet;
use sift_filter::{BloomShape, CountingBloom, KeyHash, math};

/// `CountingBloom::new(BloomShape::for_bits_per_key(n, bpk))`: `bpk`
/// counters per key, then `insert`.
pub struct SiftCounting;

impl Contender for SiftCounting {
    fn name(&self) -> &'static str {
        "sift-counting"
    }

    fn ours(&self) -> bool {
        true
    }

    fn notes(&self, p: &Params) -> String {
        format!(
            "CountingBloom::new(BloomShape::for_bits_per_key(n, {})): {} 4-bit counters per key",
            p.bits_per_key, p.bits_per_key
        )
    }

    fn build(&self, keys: &KeySet, p: &Params) -> anyhow::Result<Box<dyn Built>> {
        let shape = BloomShape::for_bits_per_key(keys.len() as u64, p.bits_per_key);
        let mut filter = CountingBloom::new(shape)?;
        for key in keys.iter() {
            filter.insert(KeyHash::of(key));
        }
        Ok(SiftBuilt::described(
            filter,
            keys.len(),
            |f, n| {
                let s = f.shape();
                Some(math::bloom_fpr(s.bits, n, s.probes))
            },
            |f| format!("k = {}", f.shape().probes),
        ))
    }
}
