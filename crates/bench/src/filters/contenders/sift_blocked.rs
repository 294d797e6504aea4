//! Sift's `BlockedBloom` (512-bit blocks, AVX2 query where available), built
//! two ways: sized up front like the baselines, and through the buffering
//! builder an SSTable writer uses when `n` is known only at the end.

use super::sift::SiftBuilt;
use super::{Built, Contender, Params};
use crate::filters::keys::KeySet;
use sift_filter::{BlockedBloom, BlockedBloomBuilder, FilterBuilder, KeyHash, math};

/// Bits per block, the unit the FPR formula averages over.
const BLOCK_BITS: u32 = 512;

/// `BlockedBloom::with_capacity(n, bpk)`, then `insert` per key.
pub struct SiftBlocked;

/// `BlockedBloomBuilder::new(bpk)`, `add` per key, `finish`.
pub struct SiftBlockedBuilder;

impl Contender for SiftBlocked {
    fn name(&self) -> &'static str {
        "sift-blocked"
    }

    fn ours(&self) -> bool {
        true
    }

    fn notes(&self, p: &Params) -> String {
        format!(
            "BlockedBloom::with_capacity(n, {}) + insert; KeyHash::of per key",
            p.bits_per_key
        )
    }

    fn sized_by_bits(&self) -> bool {
        true
    }

    fn build(&self, keys: &KeySet, p: &Params) -> anyhow::Result<Box<dyn Built>> {
        let mut filter = BlockedBloom::with_capacity(keys.len() as u64, p.bits_per_key)?;
        for key in keys.iter() {
            filter.insert(KeyHash::of(key));
        }
        Ok(wrap(filter, keys.len()))
    }
}

impl Contender for SiftBlockedBuilder {
    fn name(&self) -> &'static str {
        "sift-blocked-builder"
    }

    fn ours(&self) -> bool {
        true
    }

    fn notes(&self, p: &Params) -> String {
        format!(
            "BlockedBloomBuilder::new({}) + add + finish (buffers 16 B of hash per key); \
             same filter as sift-blocked",
            p.bits_per_key
        )
    }

    fn build(&self, keys: &KeySet, p: &Params) -> anyhow::Result<Box<dyn Built>> {
        let mut builder = BlockedBloomBuilder::new(p.bits_per_key)?;
        for key in keys.iter() {
            builder.add(KeyHash::of(key));
        }
        Ok(wrap(builder.finish(), keys.len()))
    }
}

fn wrap(filter: BlockedBloom, n: usize) -> Box<dyn Built> {
    SiftBuilt::described(
        filter,
        n,
        |f, n| {
            let m = f.num_blocks() as u64 * u64::from(BLOCK_BITS);
            Some(math::blocked_bloom_fpr(m, n, f.num_probes(), BLOCK_BITS))
        },
        |f| format!("k = {}", f.num_probes()),
    )
}
