//! The records of a run and the answers every query must get.
//!
//! Entry `i` has key `keys::key(seed, i)` (16 bytes, as in `sift-bench db`)
//! and value `v{id:08}`, a string naming one of `distinct` values, where
//! `id = (i · a mod entries) mod distinct` for a multiplier `a` coprime to
//! `entries`. `i ↦ i · a mod entries` is a bijection, so every value has
//! `entries / distinct` entries (±1) and a domain of 100% really is one
//! entry per value (`mix64(i) % distinct` would leave 37% of the values
//! unused); keys are random, so a value's entries still land in unrelated
//! tables. Nothing is random at run time, so the expected keys of every
//! value are known before the store is asked: a counting sort of the entry
//! indices by value id.

use sift_filter::mix64;

use crate::filters::keys::{self, Key};

/// The records of one configuration and the entries grouped by value.
pub struct Data {
    seed: u64,
    entries: u64,
    distinct: u64,
    /// The multiplier `a`, coprime to `entries`.
    spread: u64,
    /// `members[starts[id]..starts[id + 1]]` are the entries with value `id`.
    starts: Vec<u32>,
    members: Vec<u32>,
    /// Value ids that some entry holds (queries for present values pick
    /// among these, each with equal chance).
    present: Vec<u32>,
}

/// Value ids fit in eight decimal digits: the value string has a fixed
/// width, so absent ids (`>= distinct`) look exactly like present ones.
const MAX_DISTINCT: u64 = 100_000_000;

impl Data {
    /// `entries` records over `distinct` values (both at least 1).
    pub fn new(seed: u64, entries: u64, distinct: u64) -> anyhow::Result<Self> {
        anyhow::ensure!(
            (1..=u64::from(u32::MAX)).contains(&entries),
            "entries must be within 1 ..= 2^32 - 1"
        );
        anyhow::ensure!(
            (1..=MAX_DISTINCT / 2).contains(&distinct),
            "distinct values must be within 1 ..= {}",
            MAX_DISTINCT / 2
        );
        let d = usize::try_from(distinct)?;
        let mut spread = (mix64(seed) % entries) | 1;
        while gcd(spread, entries) != 1 {
            spread += 2;
        }
        let value_id = |i: u64| value_id(i, entries, spread, distinct);
        let mut starts = vec![0u32; d + 1];
        for i in 0..entries {
            starts[value_id(i) as usize + 1] += 1;
        }
        for id in 0..d {
            starts[id + 1] += starts[id];
        }
        let mut fill = starts.clone();
        let mut members = vec![0u32; usize::try_from(entries)?];
        for i in 0..entries {
            let slot = &mut fill[value_id(i) as usize];
            members[*slot as usize] = i as u32;
            *slot += 1;
        }
        let present = (0..d)
            .filter(|&id| starts[id + 1] > starts[id])
            .map(|id| id as u32)
            .collect();
        Ok(Self {
            seed,
            entries,
            distinct,
            spread,
            starts,
            members,
            present,
        })
    }

    /// Records loaded.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Key of entry `i`.
    pub fn key(&self, i: u64) -> Key {
        keys::key(self.seed, i)
    }

    /// Value of entry `i`.
    pub fn value(&self, i: u64) -> String {
        value_text(value_id(i, self.entries, self.spread, self.distinct))
    }

    /// The `q`-th present value of query stream `stream`: its text and id.
    pub fn present_value(&self, stream: u64, q: u64) -> (String, u32) {
        let n = self.present.len() as u64;
        let id = self.present[pick(stream, q, n) as usize];
        (value_text(u64::from(id)), id)
    }

    /// The `q`-th absent value of query stream `stream`: same format as the
    /// stored ones, id past every stored id.
    pub fn absent_value(&self, stream: u64, q: u64) -> String {
        value_text(self.distinct + pick(stream, q, self.distinct))
    }

    /// The keys of value `id`, sorted.
    pub fn expected(&self, id: u32) -> Vec<Key> {
        let id = id as usize;
        let (Some(&from), Some(&to)) = (self.starts.get(id), self.starts.get(id + 1)) else {
            return Vec::new();
        };
        let mut out: Vec<Key> = self.members[from as usize..to as usize]
            .iter()
            .map(|&i| self.key(u64::from(i)))
            .collect();
        out.sort_unstable();
        out
    }
}

/// Value id of entry `i` of `entries` among `distinct` values.
fn value_id(i: u64, entries: u64, spread: u64, distinct: u64) -> u64 {
    let scattered = (u128::from(i) * u128::from(spread) % u128::from(entries)) as u64;
    scattered % distinct
}

/// Greatest common divisor.
fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The stored text of value `id`.
fn value_text(id: u64) -> String {
    format!("v{id:08}")
}

/// The `q`-th index of a pseudo-random sequence over `0..n`.
fn pick(stream: u64, q: u64, n: u64) -> u64 {
    let x = mix64(stream.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ mix64(q));
    ((u128::from(x) * u128::from(n)) >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn groups_match_a_direct_count() {
        let data = Data::new(3, 5_000, 50).unwrap();
        let mut model: BTreeMap<String, Vec<Key>> = BTreeMap::new();
        for i in 0..5_000 {
            model.entry(data.value(i)).or_default().push(data.key(i));
        }
        for _ in 0..5 {
            for q in 0..20 {
                let (text, id) = data.present_value(1, q);
                let mut want = model[&text].clone();
                want.sort_unstable();
                assert_eq!(data.expected(id), want);
            }
        }
        for q in 0..100 {
            assert!(!model.contains_key(&data.absent_value(2, q)));
        }
    }

    #[test]
    fn every_value_has_its_share_of_entries() {
        for (entries, distinct) in [(10_000, 10_000), (10_000, 100), (9_999, 700)] {
            let data = Data::new(1, entries, distinct).unwrap();
            assert_eq!(data.present.len() as u64, distinct);
            for id in 0..distinct as u32 {
                let n = data.expected(id).len() as u64;
                assert!(n == entries / distinct || n == entries / distinct + 1);
            }
        }
        assert!(Data::new(1, 10, 0).is_err());
    }
}
