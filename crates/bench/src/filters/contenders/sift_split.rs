//! Sift's `SplitBlockBloom` (256-bit blocks, one bit per 32-bit lane, AVX2
//! query where available): the layout of the `sbbf` baseline, with any
//! probe count from 1 to 8 and fractional bits/key.

use super::sift::SiftBuilt;
use super::{Built, Contender, Params};
use crate::filters::keys::KeySet;
use sift_filter::{KeyHash, SplitBlockBloom, math};

/// `SplitBlockBloom::with_capacity(n, bpk)`, then `insert` per key.
pub struct SiftSplit;

impl Contender for SiftSplit {
    fn name(&self) -> &'static str {
        "sift-split"
    }

    fn ours(&self) -> bool {
        true
    }

    fn notes(&self, p: &Params) -> String {
        format!(
            "SplitBlockBloom::with_capacity(n, {}) + insert; KeyHash::of per key",
            p.bits_per_key
        )
    }

    fn sized_by_bits(&self) -> bool {
        true
    }

    fn build(&self, keys: &KeySet, p: &Params) -> anyhow::Result<Box<dyn Built>> {
        let mut filter = SplitBlockBloom::with_capacity(keys.len() as u64, p.bits_per_key)?;
        for key in keys.iter() {
            filter.insert(KeyHash::of(key));
        }
        Ok(SiftBuilt::described(
            filter,
            keys.len(),
            |f, n| {
                let m = f.num_blocks() as u64 * 256;
                Some(math::split_block_bloom_fpr(m, n, f.num_probes()))
            },
            |f| format!("k = {}", f.num_probes()),
        ))
    }
}
