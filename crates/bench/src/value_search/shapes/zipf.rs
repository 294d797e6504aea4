//! `zipf3` and `zipf20`: JSON user records indexed on a low-cardinality
//! field whose values follow Zipf's law with `s = 1`: a status of 3 values
//! (the first in 55% of the records) or a country of 20 (the first in
//! 28%). A search for the common value must return a large share of the
//! store.

use siftdb::Extractor;

use super::{Population, SplitMix64, Table, hex_keys, pick};
use crate::value_search::rng;

/// Zipf exponent.
const S: f64 = 1.0;

/// Statuses: the first 3 are stored, the rest are the absent values.
const STATUSES: [&str; 8] = [
    "active",
    "inactive",
    "suspended",
    "pending",
    "deleted",
    "banned",
    "trial",
    "archived",
];

/// Country codes: the first 20 are stored, the rest are the absent values.
const COUNTRIES: [&str; 40] = [
    "US", "DE", "FR", "GB", "JP", "BR", "IN", "CA", "IT", "ES", "MX", "KR", "NL", "AU", "SE", "PL",
    "CH", "BE", "AR", "TR", "NO", "DK", "FI", "IE", "PT", "AT", "CZ", "GR", "HU", "RO", "NZ", "ZA",
    "CL", "CO", "PE", "EG", "NG", "KE", "TH", "VN",
];

/// Plans, a column that is not indexed.
const PLANS: [&str; 3] = ["free", "pro", "team"];

/// A Zipf-skewed field of a user record.
pub struct Zipf {
    field: &'static str,
    names: &'static [&'static str],
    stored: usize,
    law: rng::Zipf,
}

impl Zipf {
    /// `zipf3`: `/status`, 3 values.
    pub fn status() -> Self {
        Self::new("status", &STATUSES, 3)
    }

    /// `zipf20`: `/country`, 20 values.
    pub fn country() -> Self {
        Self::new("country", &COUNTRIES, 20)
    }

    fn new(field: &'static str, names: &'static [&'static str], stored: usize) -> Self {
        Self {
            field,
            names,
            stored,
            law: rng::Zipf::new(stored, S),
        }
    }
}

impl Table for Zipf {
    fn extractor(&self) -> Extractor {
        Extractor::json_field(format!("/{}", self.field))
    }

    fn populate(&self, n: u64, rng: &mut SplitMix64) -> Population {
        let keys = hex_keys(n, rng);
        let values = (0..n).map(|_| self.law.sample(rng)).collect();
        Population {
            keys,
            values,
            distinct: self.stored as u32,
        }
    }

    /// Another value drawn from the same law.
    fn earlier(&self, current: u32, _distinct: u32, rng: &mut SplitMix64) -> u32 {
        for _ in 0..64 {
            let v = self.law.sample(rng);
            if v != current {
                return v;
            }
        }
        current
    }

    fn absent(&self, distinct: u32) -> u32 {
        (self.names.len() as u32).saturating_sub(distinct)
    }

    fn value_text(&self, id: u32) -> String {
        self.names[id as usize].to_owned()
    }

    fn record(&self, value: &str, noise: u64) -> Vec<u8> {
        format!(
            r#"{{"user":"u{:07}","{}":"{value}","plan":"{}","logins":{}}}"#,
            noise % 10_000_000,
            self.field,
            pick(&PLANS, noise >> 24),
            (noise >> 32) % 500
        )
        .into_bytes()
    }
}
