//! Baseline: the standard Bloom filter of `lsm-tree` 3 (fjall's engine), used
//! standalone through its public `table::filter::standard_bloom` module.
//!
//! Its builder writes a byte string (`MAGIC` (4 bytes), filter type, hash
//! type, `m` u64 LE, `k` u64 LE, bits) and queries go through a reader that
//! borrows it. The reader is created once per query batch, outside the
//! per-key loop, as an SSTable would keep it.

use super::{Built, Contender, Params, xxh3_64};
use crate::filters::keys::KeySet;
use lsm_tree::table::filter::standard_bloom::{Builder, StandardBloomFilterReader};
use sift_filter::math;

/// Offset of `m` in the built bytes: after the 4-byte magic and two type bytes.
const M_OFFSET: usize = 6;

/// `Builder::with_bpk(n, bpk)` + `set_with_hash(xxh3_64(key))` (the hash
/// lsm-tree itself uses for keys), `build()`, then
/// `StandardBloomFilterReader::contains_hash`.
pub struct LsmTreeBloom;

struct Filter {
    bytes: Vec<u8>,
    n: u64,
}

impl Contender for LsmTreeBloom {
    fn name(&self) -> &'static str {
        "lsm-tree"
    }

    fn ours(&self) -> bool {
        false
    }

    fn notes(&self, p: &Params) -> String {
        format!(
            "lsm_tree standard_bloom::Builder::with_bpk(n, {}) (truncates to whole bits/key, \
             k = ⌊bpk·ln 2⌋), set_with_hash/contains_hash of xxh3-64 (its own key hash)",
            p.bits_per_key
        )
    }

    fn sized_by_bits(&self) -> bool {
        true
    }

    fn build(&self, keys: &KeySet, p: &Params) -> anyhow::Result<Box<dyn Built>> {
        anyhow::ensure!(
            !keys.is_empty(),
            "lsm-tree's builder needs at least one key"
        );
        let mut builder = Builder::with_bpk(keys.len(), p.bits_per_key as f32);
        for key in keys.iter() {
            builder.set_with_hash(xxh3_64(key));
        }
        let bytes = builder.build();
        StandardBloomFilterReader::new(&bytes)?;
        Ok(Box::new(Filter {
            bytes,
            n: keys.len() as u64,
        }))
    }
}

impl Filter {
    fn reader(&self) -> Option<StandardBloomFilterReader<'_>> {
        StandardBloomFilterReader::new(&self.bytes).ok()
    }

    fn header_u64(&self, offset: usize) -> Option<u64> {
        let field = self.bytes.get(offset..offset + 8)?;
        Some(u64::from_le_bytes(field.try_into().ok()?))
    }
}

impl Built for Filter {
    fn contains(&self, key: &[u8]) -> bool {
        // `build` checked that the bytes parse; a reader that failed would
        // answer "may contain", as a filter that cannot be read must.
        self.reader().is_none_or(|r| r.contains_hash(xxh3_64(key)))
    }

    fn count_contained(&self, keys: &KeySet) -> u64 {
        let Some(reader) = self.reader() else {
            return keys.len() as u64;
        };
        let mut hits = 0;
        for key in keys.iter() {
            if reader.contains_hash(xxh3_64(key)) {
                hits += 1;
            }
        }
        hits
    }

    fn size_bytes(&self) -> usize {
        self.bytes.len()
    }

    fn expected_fpr(&self) -> Option<f64> {
        let m = self.header_u64(M_OFFSET)?;
        let k = self.header_u64(M_OFFSET + 8)?;
        Some(math::bloom_fpr(m, self.n, u32::try_from(k).ok()?))
    }
}
