//! The stores the workloads read, and the keys of the two that the scan
//! workloads get for themselves.
//!
//! - [`Store::Random`]: `filters::keys`, 16 random bytes per key: the
//!   point reads, `seekrandom` and `seekrandombounded`.
//! - [`Store::Gapped`]: [`Gapped`] integer keys, each gap between
//!   neighbours wider than [`MAX_EMPTY_RANGE`], so that a range of up to
//!   that many integers placed in a gap is empty by construction:
//!   `seekempty16`, `seekempty1024`.
//! - [`Store::Prefixed`]: [`Prefixed`] keys, an 8-byte prefix shared by
//!   [`KEYS_PER_PREFIX`] keys and a suffix: `prefixhit`, `prefixmissing`.
//!   Engines with a prefix extractor get a fixed one of [`PREFIX_LEN`]
//!   bytes on this store, and on it only.
//!
//! Every key is 16 bytes, every value [`super::workload::VALUE_LEN`]; keys
//! are computed from their index (a few ns), as in `filters::keys`.

use anyhow::ensure;
use sift_filter::mix64;

use crate::filters::keys::{self, Key};

/// Which keys a store holds, and so how each engine is configured for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Store {
    /// 16 random bytes per key (`filters::keys`).
    Random,
    /// [`Gapped`] integer keys.
    Gapped,
    /// [`Prefixed`] keys; engines get a fixed prefix extractor of
    /// [`PREFIX_LEN`] bytes.
    Prefixed,
}

impl Store {
    /// Name in progress lines.
    pub fn name(self) -> &'static str {
        match self {
            Self::Random => "random keys",
            Self::Gapped => "gapped integer keys",
            Self::Prefixed => "prefixed keys",
        }
    }

    /// The `n` keys of the store (seed `seed`) in the random order they are
    /// loaded in.
    pub fn fill_keys(self, seed: u64, n: u64) -> anyhow::Result<Vec<Key>> {
        Ok(match self {
            Self::Random => keys::generate(seed, 0, usize::try_from(n)?),
            Self::Gapped => {
                let gapped = Gapped::new(seed, n)?;
                shuffled(seed, n).map(|i| gapped.key(i)).collect()
            }
            Self::Prefixed => {
                let prefixed = Prefixed::new(seed, n)?;
                shuffled(seed, n).map(|i| prefixed.key(i)).collect()
            }
        })
    }
}

/// The longest empty range the `seekempty*` workloads ask for: every gap
/// between neighbouring [`Gapped`] keys is wider.
pub const MAX_EMPTY_RANGE: u64 = 1024;

/// The 8 bytes before the integer of every [`Gapped`] key.
const GAPPED_PREFIX: [u8; 8] = *b"gapped::";

/// Integer-like keys with wide gaps: key `i` is [`GAPPED_PREFIX`] then the
/// big-endian `u64` `i·slot + offset(i)`, where `slot = ⌊(2^64 - 1) / n⌋`
/// spreads the keys over the whole `u64` range and `offset(i)` is a
/// pseudo-random number below `slot / 2`. The upper half of every slot is
/// therefore empty: ranges placed there ([`Gapped::empty_range`]) hold no
/// key, and neighbouring keys are more than `slot / 2` apart.
#[derive(Clone, Copy, Debug)]
pub struct Gapped {
    seed: u64,
    n: u64,
    slot: u64,
}

impl Gapped {
    /// The generator of `n` keys. Fails when `n` is so large that a
    /// half-slot would not exceed [`MAX_EMPTY_RANGE`] (n above 2^51).
    pub fn new(seed: u64, n: u64) -> anyhow::Result<Self> {
        ensure!(n > 0, "a gapped store needs at least one key");
        let slot = u64::MAX / n;
        ensure!(
            slot / 2 > 2 * MAX_EMPTY_RANGE,
            "{n} gapped keys leave gaps too narrow for empty ranges of {MAX_EMPTY_RANGE}"
        );
        Ok(Self { seed, n, slot })
    }

    /// Keys in the store.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// The integer of key `i` (`i < n`).
    pub fn int(&self, i: u64) -> u64 {
        i * self.slot + below(mix64(self.seed ^ i), self.slot / 2)
    }

    /// Key `i` (`i < n`).
    pub fn key(&self, i: u64) -> Key {
        int_key(self.int(i))
    }

    /// The bounds `[a, a + len)` of a range of `len` integers (`1 ..=
    /// MAX_EMPTY_RANGE`) after key `i` and before key `i + 1`, in the empty
    /// upper half of slot `i`, at a position `salt` picks.
    pub fn empty_range(&self, i: u64, len: u64, salt: u64) -> (Key, Key) {
        let start = i * self.slot + self.slot / 2;
        // `start + span + len` is at most `(i + 1)·slot`, below key `i + 1`.
        let span = self.slot - self.slot / 2 - len;
        let a = start + below(mix64(salt), span + 1);
        (int_key(a), int_key(a + len))
    }
}

/// [`GAPPED_PREFIX`] then `x`, big-endian.
fn int_key(x: u64) -> Key {
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&GAPPED_PREFIX);
    key[8..].copy_from_slice(&x.to_be_bytes());
    key
}

/// Bytes of the prefix every [`Prefixed`] key starts with, and of the
/// engines' fixed prefix extractor on that store.
pub const PREFIX_LEN: usize = 8;

/// Keys per prefix of a [`Prefixed`] store (the last prefix may hold fewer).
pub const KEYS_PER_PREFIX: u64 = 10;

/// Keys in families of [`KEYS_PER_PREFIX`]: key `i` is prefix `i / 10`
/// then an 8-byte suffix, `mix64(seed ^ i)` big-endian (distinct for
/// distinct `i`: `mix64` is a bijection). Prefix `j` is `p` then the 7
/// bytes of `(seed + j·γ) mod 2^56`, big-endian: a bijection of `j` (γ is
/// odd), so the present prefixes (`j < prefixes`) and the missing ones
/// (`prefixes ≤ j < 2·prefixes`) are distinct by construction, and they
/// interleave over the key space, so a missing prefix falls inside the key
/// ranges of the tables: only a prefix filter rejects it.
#[derive(Clone, Copy, Debug)]
pub struct Prefixed {
    seed: u64,
    n: u64,
    prefixes: u64,
}

/// SplitMix64's increment (odd), as `filters::keys`.
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

impl Prefixed {
    /// The generator of `n` keys.
    pub fn new(seed: u64, n: u64) -> anyhow::Result<Self> {
        ensure!(n > 0, "a prefixed store needs at least one key");
        Ok(Self {
            seed,
            n,
            prefixes: n.div_ceil(KEYS_PER_PREFIX),
        })
    }

    /// Prefixes that hold keys.
    pub fn prefixes(&self) -> u64 {
        self.prefixes
    }

    /// Key `i` (`i < n`).
    pub fn key(&self, i: u64) -> Key {
        let mut key = [0u8; 16];
        key[..PREFIX_LEN].copy_from_slice(&self.prefix_number(i / KEYS_PER_PREFIX));
        key[PREFIX_LEN..].copy_from_slice(&mix64(self.seed ^ i).to_be_bytes());
        key
    }

    /// Present prefix `j` (`j < prefixes`).
    pub fn present(&self, j: u64) -> [u8; PREFIX_LEN] {
        self.prefix_number(j)
    }

    /// Keys under present prefix `j`.
    pub fn keys_under(&self, j: u64) -> u64 {
        (self.n - j * KEYS_PER_PREFIX).min(KEYS_PER_PREFIX)
    }

    /// Missing prefix `j` (`j < prefixes`): no key starts with it.
    pub fn missing(&self, j: u64) -> [u8; PREFIX_LEN] {
        self.prefix_number(self.prefixes + j)
    }

    fn prefix_number(&self, j: u64) -> [u8; PREFIX_LEN] {
        let id = self.seed.wrapping_add(j.wrapping_mul(GAMMA)) & ((1 << 56) - 1);
        let mut prefix = [0u8; PREFIX_LEN];
        prefix[0] = b'p';
        prefix[1..].copy_from_slice(&id.to_be_bytes()[1..]);
        prefix
    }
}

/// `x` scaled into `0..bound` (`0` when `bound` is 0).
fn below(x: u64, bound: u64) -> u64 {
    ((u128::from(x) * u128::from(bound)) >> 64) as u64
}

/// `0..n` in a pseudo-random order (Fisher–Yates, fixed seed).
fn shuffled(seed: u64, n: u64) -> impl Iterator<Item = u64> {
    let mut order: Vec<u64> = (0..n).collect();
    for i in (1..order.len()).rev() {
        let j = below(mix64(seed ^ (i as u64).wrapping_mul(GAMMA)), i as u64 + 1) as usize;
        order.swap(i, j);
    }
    order.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    #[test]
    fn gapped_keys_are_sorted_by_index_with_gaps_wider_than_the_longest_range() -> anyhow::Result<()>
    {
        for n in [1, 2, 1000, 100_000] {
            let gapped = Gapped::new(7, n)?;
            let ints: Vec<u64> = (0..n).map(|i| gapped.int(i)).collect();
            for pair in ints.windows(2) {
                assert!(pair[1] - pair[0] > MAX_EMPTY_RANGE, "n = {n}: {pair:?}");
            }
            // Keys sort as their integers: the prefix is shared.
            let keys: Vec<Key> = (0..n).map(|i| gapped.key(i)).collect();
            assert!(keys.windows(2).all(|p| p[0] < p[1]), "n = {n}");
        }
        assert!(Gapped::new(7, 0).is_err());
        assert!(Gapped::new(7, 1 << 53).is_err());
        Ok(())
    }

    #[test]
    fn gapped_keys_spread_over_the_integer_range() -> anyhow::Result<()> {
        let gapped = Gapped::new(7, 1000)?;
        assert!(gapped.int(0) < u64::MAX / 1000);
        assert!(gapped.int(999) >= u64::MAX / 1000 * 999);
        Ok(())
    }

    /// Every empty range, of every length asked for, falls strictly between
    /// two neighbouring keys (or after the last one): no key inside.
    #[test]
    fn empty_ranges_hold_no_key() -> anyhow::Result<()> {
        let n = 20_000;
        let gapped = Gapped::new(3, n)?;
        let stored: BTreeSet<Key> = (0..n).map(|i| gapped.key(i)).collect();
        for len in [1, 16, 1024] {
            for i in 0..n {
                let (a, b) = gapped.empty_range(i, len, i ^ len);
                assert!(a < b);
                let a_int = u64::from_be_bytes(a[8..].try_into()?);
                let b_int = u64::from_be_bytes(b[8..].try_into()?);
                assert_eq!(b_int - a_int, len);
                assert!(a > gapped.key(i), "range {i} starts at or before key {i}");
                if i + 1 < n {
                    assert!(b <= gapped.key(i + 1), "range {i} passes key {}", i + 1);
                }
                assert_eq!(stored.range(a..b).next(), None, "len {len}, range {i}");
            }
        }
        Ok(())
    }

    #[test]
    fn every_prefix_holds_its_count_and_missing_prefixes_hold_none() -> anyhow::Result<()> {
        for n in [1, 10, 95, 10_000] {
            let prefixed = Prefixed::new(11, n)?;
            let mut per_prefix: BTreeMap<[u8; PREFIX_LEN], u64> = BTreeMap::new();
            let mut all = BTreeSet::new();
            for i in 0..n {
                let key = prefixed.key(i);
                assert!(all.insert(key), "n = {n}: key {i} repeats");
                let prefix: [u8; PREFIX_LEN] = key[..PREFIX_LEN].try_into()?;
                *per_prefix.entry(prefix).or_default() += 1;
            }
            assert_eq!(per_prefix.len() as u64, prefixed.prefixes(), "n = {n}");
            for j in 0..prefixed.prefixes() {
                let count = per_prefix.get(&prefixed.present(j)).copied();
                assert_eq!(count, Some(prefixed.keys_under(j)), "n = {n}, prefix {j}");
                assert!(!per_prefix.contains_key(&prefixed.missing(j)), "n = {n}");
            }
            assert_eq!(per_prefix.values().sum::<u64>(), n);
            if n % KEYS_PER_PREFIX == 0 {
                assert!(per_prefix.values().all(|&c| c == KEYS_PER_PREFIX));
            }
        }
        Ok(())
    }

    /// Missing prefixes interleave with present ones: most fall between
    /// the smallest and the largest present prefix, as inside a table.
    #[test]
    fn missing_prefixes_fall_among_present_ones() -> anyhow::Result<()> {
        let prefixed = Prefixed::new(5, 10_000)?;
        let present: BTreeSet<_> = (0..1000).map(|j| prefixed.present(j)).collect();
        let (lo, hi) = (present.first().copied(), present.last().copied());
        let inside = (0..1000)
            .map(|j| Some(prefixed.missing(j)))
            .filter(|m| *m > lo && *m < hi)
            .count();
        assert!(inside > 990, "{inside}");
        Ok(())
    }

    #[test]
    fn fill_order_is_a_permutation() -> anyhow::Result<()> {
        let order: Vec<u64> = shuffled(9, 1000).collect();
        assert_eq!(order.iter().copied().collect::<BTreeSet<_>>().len(), 1000);
        assert_ne!(order, (0..1000).collect::<Vec<_>>());
        for store in [Store::Random, Store::Gapped, Store::Prefixed] {
            let keys = store.fill_keys(9, 1000)?;
            assert_eq!(keys.iter().collect::<BTreeSet<_>>().len(), 1000);
        }
        Ok(())
    }
}
