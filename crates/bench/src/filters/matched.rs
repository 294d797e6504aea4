//! `sift-bench filters --fpr`: the filters compared at equal accuracy
//! rather than equal memory.
//!
//! For each target FPR, every Bloom kind ([`Contender::sized_by_bits`]) is
//! built at the fewest bits per key whose formula FPR meets the target,
//! found by bisection on builds from the first [`SIZING_KEYS`] members;
//! a kind of one fixed FPR (the XOR family, Ribbon at 1%) joins the
//! targets it meets within a factor of two. The rows then run as in the
//! main table, interleaved.

use super::contenders::{Contender, Params};
use super::keys::KeySet;

/// Members the sizing builds use: enough that the formulas see the fill of
/// a large filter, few enough that a bisection takes a second.
pub const SIZING_KEYS: usize = 200_000;

/// Bisection steps over `[1, 64]` bits per key: about 0.004 bits apart.
const STEPS: u32 = 14;

/// The bits per key at which `contender` meets `target` (a fraction), or
/// `None` if it has one FPR and that is not within a factor of two of the
/// target (or it has no formula).
pub fn bits_for(
    contender: &dyn Contender,
    keys: &KeySet,
    target: f64,
) -> anyhow::Result<Option<f64>> {
    let fpr_at = |bits_per_key: f64| -> anyhow::Result<Option<f64>> {
        let params = Params {
            n: keys.len(),
            bits_per_key,
        };
        Ok(contender.build(keys, &params)?.expected_fpr())
    };
    if !contender.sized_by_bits() {
        let fixed = fpr_at(super::DEFAULT_BITS_PER_KEY)?;
        return Ok(fixed
            .filter(|&p| p <= target && p > target / 2.0)
            .map(|_| super::DEFAULT_BITS_PER_KEY));
    }
    let (mut low, mut high) = (1.0, 64.0);
    if fpr_at(high)?.is_none_or(|p| p > target) {
        return Ok(None);
    }
    for _ in 0..STEPS {
        let mid = f64::midpoint(low, high);
        match fpr_at(mid)? {
            Some(p) if p <= target => high = mid,
            _ => low = mid,
        }
    }
    Ok(Some(high))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filters::contenders;

    fn contender(name: &str) -> Box<dyn Contender> {
        contenders::all()
            .into_iter()
            .find(|c| c.name() == name)
            .unwrap()
    }

    #[test]
    fn bloom_kinds_get_the_fewest_bits_that_meet_the_target() {
        let keys = KeySet::generate(1, 0, 20_000, 16);
        let blocked = contender("sift-blocked");
        let fpr_at = |bits_per_key| {
            let params = Params {
                n: keys.len(),
                bits_per_key,
            };
            blocked
                .build(&keys, &params)
                .unwrap()
                .expected_fpr()
                .unwrap()
        };
        for target in [0.01, 0.004, 0.001] {
            let bits = bits_for(blocked.as_ref(), &keys, target).unwrap().unwrap();
            assert!(fpr_at(bits) <= target, "{target}: {bits}");
            assert!(fpr_at(bits - 0.05) > target, "{target}: {bits}");
        }
    }

    #[test]
    fn fixed_kinds_join_only_the_targets_they_meet_within_2x() {
        let keys = KeySet::generate(1, 0, 20_000, 16);
        let fuse = contender("sift-bfuse8");
        assert!(bits_for(fuse.as_ref(), &keys, 0.004).unwrap().is_some());
        assert!(bits_for(fuse.as_ref(), &keys, 0.01).unwrap().is_none());
        assert!(bits_for(fuse.as_ref(), &keys, 0.001).unwrap().is_none());
    }
}
