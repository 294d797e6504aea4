//! Sift's `PartitionedBloom`: `k` partitions of `m/k` bits, one probe each.

use super::sift::SiftBuilt;
use super::{Built, Contender, Params};
use crate::filters::keys::KeySet;
use sift_filter::{BloomShape, KeyHash, PartitionedBloom, math};

/// `PartitionedBloom::new(BloomShape::for_bits_per_key(n, bpk))`, then `insert`.
pub struct SiftPartitioned;

impl Contender for SiftPartitioned {
    fn name(&self) -> &'static str {
        "sift-partitioned"
    }

    fn ours(&self) -> bool {
        true
    }

    fn notes(&self, p: &Params) -> String {
        format!(
            "PartitionedBloom::new(BloomShape::for_bits_per_key(n, {}))",
            p.bits_per_key
        )
    }

    fn build(&self, keys: &KeySet, p: &Params) -> anyhow::Result<Box<dyn Built>> {
        let shape = BloomShape::for_bits_per_key(keys.len() as u64, p.bits_per_key);
        let mut filter = PartitionedBloom::new(shape)?;
        for key in keys.iter() {
            filter.insert(KeyHash::of(key));
        }
        Ok(SiftBuilt::described(
            filter,
            keys.len(),
            |f, n| {
                let s = f.shape();
                Some(math::partitioned_bloom_fpr(s.bits, n, s.probes))
            },
            |f| format!("k = {}", f.shape().probes),
        ))
    }
}
