//! The data shapes: generated tables whose indexed column has the value
//! distribution of a kind of real data (see `docs/value-search.md`).
//!
//! A shape ([`Table`]) says how its records look (CSV or JSON lines of a
//! few columns), which extractor a user would declare for the indexed
//! column, which value each record holds and how value ids read as text.
//! [`Dataset`](super::dataset::Dataset) turns it into the load and the
//! expected answers.

mod clustered;
mod hitters;
mod small;
mod spread;
mod zipf;

use std::fmt;

use siftdb::Extractor;

use super::rng::{GAMMA, SplitMix64};
use sift_filter::mix64;

/// The records of one shape before the load: record `i` has key `keys[i]`
/// and, in its final version, value id `values[i]`.
pub struct Population {
    /// Primary keys, distinct, none starting with `0xff` (the exact
    /// index's prefix).
    pub keys: Vec<Vec<u8>>,
    /// Final value id of each record, below `distinct`.
    pub values: Vec<u32>,
    /// Value ids `0..distinct` may be stored; ids from `distinct` on never
    /// are.
    pub distinct: u32,
}

/// One generated table.
pub trait Table {
    /// The extractor a user would declare for the indexed column.
    fn extractor(&self) -> Extractor;

    /// Keys and final values of `n ≥ 1` records.
    fn populate(&self, n: u64, rng: &mut SplitMix64) -> Population;

    /// The value id an earlier version of a record held, when its final
    /// value is `current` (of `distinct`): what an update changes. By
    /// default any other id, uniformly.
    fn earlier(&self, current: u32, distinct: u32, rng: &mut SplitMix64) -> u32 {
        other_uniform(current, distinct, rng)
    }

    /// How many never-stored ids follow the stored ones (`distinct..`),
    /// each with a text of the same format. By default as many as are
    /// stored.
    fn absent(&self, distinct: u32) -> u32 {
        distinct
    }

    /// The text of value id `id` (injective over stored and absent ids).
    fn value_text(&self, id: u32) -> String;

    /// The stored record whose indexed column holds `value`; the other
    /// columns come from `noise`.
    fn record(&self, value: &str, noise: u64) -> Vec<u8>;
}

/// The shapes, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Shape {
    /// Small CSV records, ~90% distinct codes in the indexed column.
    Small,
    /// JSON orders keyed by customer: a value's records are adjacent keys.
    Clustered,
    /// CSV flights by tail number: ~100 records per value, all over the keys.
    Spread,
    /// JSON users by status: 3 values, Zipf-skewed.
    Zipf3,
    /// JSON users by country: 20 values, Zipf-skewed.
    Zipf20,
    /// JSON users by cloud region: 16 values, Zipf-skewed.
    Zipf16,
    /// JSON users by city: 105 values, Zipf-skewed.
    Zipf105,
    /// JSON events by tag: 3 heavy hitters (60%) among `n / 4` rare tags.
    Hitters,
}

impl Shape {
    /// Every shape, in report order.
    pub const ALL: [Self; 8] = [
        Self::Small,
        Self::Clustered,
        Self::Spread,
        Self::Zipf3,
        Self::Zipf20,
        Self::Zipf16,
        Self::Zipf105,
        Self::Hitters,
    ];

    /// Name in options and reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Small => "small",
            Self::Clustered => "clustered",
            Self::Spread => "spread",
            Self::Zipf3 => "zipf3",
            Self::Zipf20 => "zipf20",
            Self::Zipf16 => "zipf16",
            Self::Zipf105 => "zipf105",
            Self::Hitters => "hitters",
        }
    }

    /// Its generator.
    pub fn table(self) -> Box<dyn Table> {
        match self {
            Self::Small => Box::new(small::Small),
            Self::Clustered => Box::new(clustered::Clustered),
            Self::Spread => Box::new(spread::Spread),
            Self::Zipf3 => Box::new(zipf::Zipf::status()),
            Self::Zipf20 => Box::new(zipf::Zipf::country()),
            Self::Zipf16 => Box::new(zipf::Zipf::region()),
            Self::Zipf105 => Box::new(zipf::Zipf::city()),
            Self::Hitters => Box::new(hitters::Hitters),
        }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `n` random 16-character lowercase hex keys (like fillrandom's, but
/// text, so none starts with `0xff`): key `i` is
/// `mix64(base + (i + 1)·γ)`, injective in `i` because γ is odd and
/// `mix64` a bijection.
fn hex_keys(n: u64, rng: &mut SplitMix64) -> Vec<Vec<u8>> {
    let base = rng.next_u64();
    (0..n)
        .map(|i| {
            let x = mix64(base.wrapping_add((i + 1).wrapping_mul(GAMMA)));
            format!("{x:016x}").into_bytes()
        })
        .collect()
}

/// A uniformly random id of `0..distinct` other than `current` (`current`
/// itself when it is the only one).
fn other_uniform(current: u32, distinct: u32, rng: &mut SplitMix64) -> u32 {
    if distinct < 2 {
        return current;
    }
    let v = rng.below(u64::from(distinct) - 1) as u32;
    if v >= current { v + 1 } else { v }
}

/// Item `noise mod len` of `items`.
fn pick<'a>(items: &[&'a str], noise: u64) -> &'a str {
    items[(noise % items.len() as u64) as usize]
}
