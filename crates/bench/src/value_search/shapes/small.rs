//! `small`: an inventory of small CSV records, `code,qty,price,warehouse,month`
//! (about 30 bytes), indexed on the code (column 0). 90% of the records
//! have a code of their own; the other 10% repeat one of those codes:
//! high cardinality, as a product code or an e-mail column.

use siftdb::Extractor;

use super::{Population, SplitMix64, Table, hex_keys};

/// Share of records with a distinct code.
const DISTINCT_SHARE: f64 = 0.9;

/// Crockford's base-32 alphabet (no I, L, O, U): 8 characters carry 40 bits.
const BASE32: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// The `small` shape.
pub struct Small;

impl Table for Small {
    fn extractor(&self) -> Extractor {
        Extractor::delimited(0, b',')
    }

    /// Records `0..D` hold codes `0..D` (`D = ⌈0.9 n⌉`), the rest a random
    /// one of them; keys are random, so codes are in no key order.
    fn populate(&self, n: u64, rng: &mut SplitMix64) -> Population {
        let distinct = ((n as f64 * DISTINCT_SHARE).ceil() as u64).clamp(1, n);
        let keys = hex_keys(n, rng);
        let values = (0..n)
            .map(|i| {
                if i < distinct {
                    i as u32
                } else {
                    rng.below(distinct) as u32
                }
            })
            .collect();
        Population {
            keys,
            values,
            distinct: distinct as u32,
        }
    }

    /// Eight base-32 characters of a 40-bit bijection of `id`, so codes
    /// look random and never repeat.
    fn value_text(&self, id: u32) -> String {
        let x = scramble40(u64::from(id));
        (0..8)
            .map(|i| char::from(BASE32[((x >> (35 - 5 * i)) & 31) as usize]))
            .collect()
    }

    fn record(&self, value: &str, noise: u64) -> Vec<u8> {
        let qty = 1 + noise % 99;
        let cents = (noise >> 8) % 100_000;
        let warehouse = (noise >> 28) % 24;
        let month = 1 + (noise >> 36) % 12;
        format!(
            "{value},{qty},{:03}.{:02},WH{warehouse:02},2024-{month:02}",
            cents / 100,
            cents % 100
        )
        .into_bytes()
    }
}

/// A bijection of the 40-bit integers: two rounds of an odd multiply
/// (mod 2^40) and a xor-shift, each invertible.
fn scramble40(mut x: u64) -> u64 {
    const MASK: u64 = (1 << 40) - 1;
    x &= MASK;
    x = x.wrapping_mul(0x9e37_79b9_7f4b) & MASK;
    x ^= x >> 21;
    x = x.wrapping_mul(0xbf58_476d_1ce5) & MASK;
    x ^ (x >> 19)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_distinct_and_eight_characters() {
        let codes: HashSet<String> = (0..50_000).map(|id| Small.value_text(id)).collect();
        assert_eq!(codes.len(), 50_000);
        assert!(codes.iter().all(|c| c.len() == 8));
    }
}
