//! `spread`: CSV flights `date,carrier,flight,tail,origin,dest,delay`
//! under random keys, indexed on the aircraft's tail number (column 3).
//! Each tail flies `n / 100` flights (±1) scattered over the whole key
//! space, so a value sits in one or two records of many tables (like a
//! real tail number: ~110 flights in 54 of 224 tables).

use siftdb::Extractor;

use super::{Population, SplitMix64, Table, hex_keys, pick};

/// Records per value.
const PER_VALUE: u64 = 100;

/// Tail numbers `N100AA ..= N999ZZ`: 900 · 26² of them.
const TAILS: u64 = 900 * 26 * 26;

const CARRIERS: [&str; 6] = ["UA", "AA", "DL", "WN", "AS", "B6"];
const AIRPORTS: [&str; 12] = [
    "SFO", "ORD", "JFK", "LAX", "ATL", "DFW", "DEN", "SEA", "BOS", "MIA", "PHX", "IAH",
];

/// The `spread` shape.
pub struct Spread;

impl Table for Spread {
    fn extractor(&self) -> Extractor {
        Extractor::delimited(3, b',')
    }

    /// Record `i` flies tail `i mod D` (`D = n / 100`); keys are random,
    /// so each tail's flights land all over the key space.
    fn populate(&self, n: u64, rng: &mut SplitMix64) -> Population {
        let distinct = (n / PER_VALUE).max(1);
        Population {
            keys: hex_keys(n, rng),
            values: (0..n).map(|i| (i % distinct) as u32).collect(),
            distinct: distinct as u32,
        }
    }

    /// `N`, three digits, two letters: distinct below [`TAILS`], which
    /// stored and absent ids of 10M records (2 · 100,000) stay under.
    fn value_text(&self, id: u32) -> String {
        let id = u64::from(id);
        debug_assert!(id < TAILS, "tail numbers repeat past {TAILS}");
        let letters = id / 900;
        format!(
            "N{}{}{}",
            100 + id % 900,
            char::from(b'A' + ((letters / 26) % 26) as u8),
            char::from(b'A' + (letters % 26) as u8)
        )
    }

    fn record(&self, value: &str, noise: u64) -> Vec<u8> {
        let month = 1 + noise % 12;
        let day = 1 + (noise >> 4) % 28;
        let flight = 1 + (noise >> 9) % 2_999;
        let delay = ((noise >> 21) % 90) as i64 - 15;
        format!(
            "2024-{month:02}-{day:02},{},{flight},{value},{},{},{delay}",
            pick(&CARRIERS, noise >> 30),
            pick(&AIRPORTS, noise >> 36),
            pick(&AIRPORTS, noise >> 44)
        )
        .into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn tail_numbers_are_distinct_for_the_largest_run() {
        let ids = 2 * 10_000_000 / PER_VALUE;
        assert!(ids <= TAILS);
        let tails: HashSet<String> = (0..TAILS as u32).map(|id| Spread.value_text(id)).collect();
        assert_eq!(tails.len() as u64, TAILS);
        assert!(tails.iter().all(|t| t.len() == 6));
    }
}
