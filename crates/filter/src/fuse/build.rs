//! Building a table: size it, then peel under successive seeds.

use super::fingerprint::Fingerprint;
use super::hashing::SlotHasher;
use super::layout::Layout;
use super::peel::{assign, peel};
use super::placed::Placed;
use super::table::{Table, fits};
use crate::error::{Error, Result};
use crate::hash::KeyHash;

/// Seeds tried before giving up. At the sizes of `math::fuse` a seed
/// fails rarely: measured over 2,000 key sets per size from 1 to 1,000
/// keys (300 up to 10,000, 30 at 100,000), at most one seed in 16 for a
/// binary fuse filter at any size, one in 8 for an XOR filter (its worst
/// is 2,000 to 5,000 keys). All 32 fail with probability below `8^-32`
/// for distinct hashes; a failure means the key set cannot peel.
pub(super) const MAX_SEEDS: u32 = 32;

/// Builds a table of `hashes` sized by `L::for_keys`, trying seeds
/// `0..MAX_SEEDS`. Duplicates are allowed: a set with duplicates cannot
/// peel (two equal hashes share all three slots), so the first failure
/// sorts and deduplicates `hashes` in place, and the seeds after it build
/// from the distinct hashes; a first seed that succeeds proves there were
/// none, and saves the sort.
pub(super) fn build<F: Fingerprint, L: Layout>(hashes: &mut Vec<KeyHash>) -> Result<Table<F, L>> {
    build_with(hashes, L::for_keys, MAX_SEEDS)
}

/// [`build`] with the layout for a key count and the seed budget given.
pub(super) fn build_with<F: Fingerprint, L: Layout>(
    hashes: &mut Vec<KeyHash>,
    layout_for: impl Fn(u64) -> Option<L>,
    seeds: u32,
) -> Result<Table<F, L>> {
    if hashes.is_empty() {
        return Ok(Table::empty());
    }
    let mut deduplicated = false;
    for seed in 0..seeds.min(MAX_SEEDS) {
        let n = hashes.len() as u64;
        let layout = layout_for(n)
            .filter(|layout| n <= u64::from(u32::MAX) && fits::<F, L>(layout))
            .ok_or_else(|| {
                Error::InvalidParameter(format!(
                    "{n} keys are more than one {} of {}-bit fingerprints holds",
                    L::NAME,
                    F::BITS
                ))
            })?;
        let placed = Placed::<F>::new(&layout, hashes, SlotHasher::new(seed));
        if let Some(order) = peel(&layout, &placed.xs) {
            let fingerprints = assign(&layout, &order, &placed.xs, &placed.fingerprints);
            return Ok(Table::from_parts(seed, n, layout, fingerprints));
        }
        if !deduplicated {
            hashes.sort_unstable();
            hashes.dedup();
            deduplicated = true;
        }
    }
    Err(Error::ConstructionFailed {
        kind: L::KIND,
        seeds,
    })
}

#[cfg(test)]
mod tests {
    use super::super::layout::{Blocks, Segments};
    use super::*;
    use crate::hash::mix64;

    fn keys(seed: u64, n: u64) -> Vec<KeyHash> {
        (0..n)
            .map(|i| KeyHash::from_parts(mix64(seed ^ (i << 20) ^ 0x55), mix64(i + seed)))
            .collect()
    }

    #[test]
    fn duplicates_are_removed_after_the_first_failure() {
        let mut hashes = keys(1, 3_000);
        hashes.extend_from_within(..1_000);
        let t: Table<u8, Segments> = build(&mut hashes).unwrap();
        assert_eq!(t.num_keys(), 3_000);
        assert_eq!(hashes.len(), 3_000);
        assert!(keys(1, 3_000).iter().all(|&h| t.may_contain(h)));
    }

    #[test]
    fn distinct_keys_build_under_the_first_seed_without_sorting() {
        let original = keys(2, 5_000);
        let mut hashes = original.clone();
        let t: Table<u16, Blocks> = build(&mut hashes).unwrap();
        if t.seed() == 0 {
            assert_eq!(hashes, original, "sorted although seed 0 succeeded");
        }
    }

    /// A layout too small for the keys fails under every seed and reports
    /// the budget; a budget of one seed fails where that seed does.
    #[test]
    fn exhausted_seeds_are_an_error() {
        let mut hashes = keys(3, 1_000);
        let tiny = |_| Segments::new(2, 1);
        assert_eq!(
            build_with::<u8, _>(&mut hashes, tiny, MAX_SEEDS),
            Err(Error::ConstructionFailed {
                kind: crate::FilterKind::BinaryFuse,
                seeds: MAX_SEEDS
            })
        );
        let mut hashes = keys(4, 100);
        let small = |_| Some(Blocks::for_keys(10).unwrap_or(Blocks::empty()));
        assert!(matches!(
            build_with::<u16, _>(&mut hashes, small, 1),
            Err(Error::ConstructionFailed { seeds: 1, .. })
        ));
    }

    #[test]
    fn too_many_keys_for_one_encoding_is_an_error() {
        let mut hashes = keys(5, 10);
        let huge = |_| Segments::new(18, (u64::from(u32::MAX) >> 18) - 2);
        assert!(matches!(
            build_with::<u16, _>(&mut hashes, huge, 1),
            Err(Error::InvalidParameter(_))
        ));
    }
}
