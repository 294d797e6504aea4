//! Baseline: `qfilter` 0.3, a rank-select quotient filter (Pandey et al.
//! 2017), sized for `n` keys at 1% FPR.

use super::{Built, Contender, Params, xxh3_64};
use crate::filters::keys::KeySet;

/// The target FPR the filter is sized for: the same ~1% the Bloom kinds
/// reach at 10 bits/key.
const TARGET_FPR: f64 = 0.01;

/// `qfilter::Filter::new(n, 0.01)`, fed `insert_fingerprint(false, h)` and
/// `contains_fingerprint(h)` with `h` = XXH3-64 of the key.
pub struct QFilter;

struct Filter(qfilter::Filter);

impl Contender for QFilter {
    fn name(&self) -> &'static str {
        "qfilter"
    }

    fn ours(&self) -> bool {
        false
    }

    fn notes(&self, _: &Params) -> String {
        format!(
            "qfilter::Filter::new(n, {TARGET_FPR}); insert_fingerprint/contains_fingerprint of xxh3-64"
        )
    }

    fn build(&self, keys: &KeySet, _: &Params) -> anyhow::Result<Box<dyn Built>> {
        let mut inner = qfilter::Filter::new(keys.len() as u64, TARGET_FPR)
            .map_err(|e| anyhow::anyhow!("qfilter sizing failed: {e:?}"))?;
        for key in keys.iter() {
            inner
                .insert_fingerprint(false, xxh3_64(key))
                .map_err(|e| anyhow::anyhow!("qfilter insert failed: {e:?}"))?;
        }
        Ok(Box::new(Filter(inner)))
    }
}

impl Built for Filter {
    #[inline]
    fn contains(&self, key: &[u8]) -> bool {
        self.0.contains_fingerprint(xxh3_64(key))
    }

    fn size_bytes(&self) -> usize {
        self.0.memory_usage()
    }

    fn expected_fpr(&self) -> Option<f64> {
        Some(self.0.current_error_ratio())
    }

    fn detail(&self) -> String {
        format!(
            "{}-bit fingerprints, load {:.3}",
            self.0.fingerprint_size(),
            self.0.len() as f64 / self.0.capacity() as f64 * 0.95
        )
    }
}
