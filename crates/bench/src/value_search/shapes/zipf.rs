//! `zipf3`, `zipf16`, `zipf20` and `zipf105`: JSON user records indexed
//! on a low-cardinality field whose values follow Zipf's law with `s = 1`:
//! a status of 3 values (the first in 55% of the records), a cloud region
//! of 16 (30%), a country of 20 (28%) or a city of 105 (19%). A search for
//! the common value must return a large share of the store; one for the
//! rarest of 105, a few thousandths of it.

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

/// Cloud regions: the first 16 are stored, the rest are the absent values.
const REGIONS: [&str; 32] = [
    "us-east-1",
    "us-west-2",
    "eu-west-1",
    "eu-central-1",
    "ap-southeast-1",
    "ap-northeast-1",
    "us-east-2",
    "ap-south-1",
    "sa-east-1",
    "ca-central-1",
    "eu-west-2",
    "ap-southeast-2",
    "us-west-1",
    "eu-north-1",
    "ap-northeast-2",
    "eu-west-3",
    "af-south-1",
    "me-south-1",
    "ap-east-1",
    "eu-south-1",
    "ap-northeast-3",
    "me-central-1",
    "il-central-1",
    "ap-southeast-3",
    "eu-central-2",
    "eu-south-2",
    "ap-south-2",
    "ap-southeast-4",
    "ca-west-1",
    "mx-central-1",
    "us-gov-west-1",
    "us-gov-east-1",
];

/// Plans, a column that is not indexed.
const PLANS: [&str; 3] = ["free", "pro", "team"];

/// How value ids read as text.
enum Names {
    /// Item `id` of a list: past the stored ones, the absent values.
    Listed(&'static [&'static str]),
    /// `{prefix}-{id:03}`: as many absent values as stored, in the same
    /// format (too many values for a list of real names).
    Numbered(&'static str),
}

/// A Zipf-skewed field of a user record.
pub struct Zipf {
    field: &'static str,
    names: Names,
    stored: usize,
    law: rng::Zipf,
}

impl Zipf {
    /// `zipf3`: `/status`, 3 values.
    pub fn status() -> Self {
        Self::new("status", Names::Listed(&STATUSES), 3)
    }

    /// `zipf16`: `/region`, 16 values.
    pub fn region() -> Self {
        Self::new("region", Names::Listed(&REGIONS), 16)
    }

    /// `zipf20`: `/country`, 20 values.
    pub fn country() -> Self {
        Self::new("country", Names::Listed(&COUNTRIES), 20)
    }

    /// `zipf105`: `/city`, 105 values.
    pub fn city() -> Self {
        Self::new("city", Names::Numbered("city"), 105)
    }

    fn new(field: &'static str, names: Names, stored: usize) -> Self {
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
        match self.names {
            Names::Listed(names) => (names.len() as u32).saturating_sub(distinct),
            Names::Numbered(_) => distinct,
        }
    }

    fn value_text(&self, id: u32) -> String {
        match self.names {
            Names::Listed(names) => names[id as usize].to_owned(),
            Names::Numbered(prefix) => format!("{prefix}-{id:03}"),
        }
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
