//! Sift's `AtomicBloom`: the standard Bloom layout with relaxed `fetch_or`
//! inserts through `&self`. Measured single-threaded, like every contender.

use super::sift::SiftBuilt;
use super::{Built, Contender, Params};
use crate::filters::keys::KeySet;
use sift_filter::{AtomicBloom, BloomShape, KeyHash, math};

/// `AtomicBloom::new(BloomShape::for_bits_per_key(n, bpk))`, then `insert`.
pub struct SiftAtomic;

impl Contender for SiftAtomic {
    fn name(&self) -> &'static str {
        "sift-atomic"
    }

    fn ours(&self) -> bool {
        true
    }

    fn notes(&self, p: &Params) -> String {
        format!(
            "AtomicBloom::new(BloomShape::for_bits_per_key(n, {})), inserts from one thread",
            p.bits_per_key
        )
    }

    fn build(&self, keys: &KeySet, p: &Params) -> anyhow::Result<Box<dyn Built>> {
        let shape = BloomShape::for_bits_per_key(keys.len() as u64, p.bits_per_key);
        let filter = AtomicBloom::new(shape)?;
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
