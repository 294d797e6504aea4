//! `hitters`: JSON events under random keys, indexed on `/tag`: a few heavy
//! hitters among many rare values, as event types beside campaign or
//! experiment tags. Three tags hold 30%, 20% and 10% of the records; the
//! other 40% draw uniformly among `n / 4` rare tags (1.6 records each on
//! average, a fifth of them never drawn). A search must return either a
//! large share of the store or a record or two.

use siftdb::Extractor;

use super::{Population, SplitMix64, Table, hex_keys, pick};

/// The heavy tags (ids `0..3`), in order of frequency.
const HEAVY: [&str; 3] = ["page_view", "click", "search"];

/// Percent of the records holding each heavy tag; the rest hold rare ones.
const HEAVY_PERCENT: [u64; 3] = [30, 20, 10];

/// Records per rare tag (`n / 4` of them).
const RECORDS_PER_RARE: u64 = 4;

/// Devices, a column that is not indexed.
const DEVICES: [&str; 3] = ["web", "ios", "android"];

/// The `hitters` shape.
pub struct Hitters;

impl Hitters {
    /// A tag id drawn from the shape's law, with `rare` rare tags
    /// (ids `3..3 + rare`).
    fn draw(rare: u64, rng: &mut SplitMix64) -> u32 {
        let mut percent = rng.below(100);
        for (id, &share) in HEAVY_PERCENT.iter().enumerate() {
            if percent < share {
                return id as u32;
            }
            percent -= share;
        }
        (HEAVY.len() as u64 + rng.below(rare)) as u32
    }
}

impl Table for Hitters {
    fn extractor(&self) -> Extractor {
        Extractor::json_field("/tag")
    }

    /// Ids `0..3` are the heavy tags, `3..3 + max(n / 4, 1)` the rare ones
    /// (so at least 4 ids, whatever `n`).
    fn populate(&self, n: u64, rng: &mut SplitMix64) -> Population {
        let rare = (n / RECORDS_PER_RARE).max(1);
        let keys = hex_keys(n, rng);
        let values = (0..n).map(|_| Self::draw(rare, rng)).collect();
        Population {
            keys,
            values,
            distinct: (HEAVY.len() as u64 + rare) as u32,
        }
    }

    /// Another tag drawn from the same law.
    fn earlier(&self, current: u32, distinct: u32, rng: &mut SplitMix64) -> u32 {
        let rare = u64::from(distinct)
            .saturating_sub(HEAVY.len() as u64)
            .max(1);
        for _ in 0..64 {
            let v = Self::draw(rare, rng);
            if v != current && v < distinct {
                return v;
            }
        }
        current
    }

    /// Heavy tags by name, the others `promo-` and seven digits: distinct
    /// for every id, absent ones (past the stored) included.
    fn value_text(&self, id: u32) -> String {
        match HEAVY.get(id as usize) {
            Some(tag) => (*tag).to_owned(),
            None => format!("promo-{:07}", id as usize - HEAVY.len()),
        }
    }

    fn record(&self, value: &str, noise: u64) -> Vec<u8> {
        format!(
            r#"{{"session":"s{:08x}","tag":"{value}","device":"{}","ms":{}}}"#,
            noise & 0xffff_ffff,
            pick(&DEVICES, noise >> 32),
            (noise >> 40) % 2_000
        )
        .into_bytes()
    }
}
