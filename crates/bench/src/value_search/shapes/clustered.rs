//! `clustered`: JSON orders whose key starts with the customer, indexed on
//! `/customer`. Each customer has 50 to 500 orders (uniform), all under
//! adjacent keys `c{customer:07}o{order:06}`: a value's records sit
//! together in key space and so in one or a few tables, as a customer's
//! orders, a tenant's rows or a day's events do.

use siftdb::Extractor;

use super::{Population, SplitMix64, Table, pick};

/// Fewest orders of a customer.
const MIN_ORDERS: u64 = 50;
/// Most orders of a customer.
const MAX_ORDERS: u64 = 500;

/// Order states, a column that is not indexed.
const STATES: [&str; 4] = ["placed", "paid", "shipped", "delivered"];

/// The `clustered` shape.
pub struct Clustered;

impl Table for Clustered {
    fn extractor(&self) -> Extractor {
        Extractor::json_field("/customer")
    }

    fn populate(&self, n: u64, rng: &mut SplitMix64) -> Population {
        let mut keys = Vec::with_capacity(n as usize);
        let mut values = Vec::with_capacity(n as usize);
        let mut customer = 0u32;
        while (keys.len() as u64) < n {
            let orders = MIN_ORDERS + rng.below(MAX_ORDERS - MIN_ORDERS + 1);
            for order in 0..orders.min(n - keys.len() as u64) {
                keys.push(format!("c{customer:07}o{order:06}").into_bytes());
                values.push(customer);
            }
            customer += 1;
        }
        Population {
            keys,
            values,
            distinct: customer,
        }
    }

    /// A neighbouring customer (the order was first booked to the next
    /// account in the list): the old version stays near its value's keys.
    fn earlier(&self, current: u32, distinct: u32, rng: &mut SplitMix64) -> u32 {
        let up = rng.below(2) == 0;
        match (up, current) {
            (true, c) if c + 1 < distinct => c + 1,
            (_, 0) if distinct > 1 => 1,
            (_, 0) => 0,
            (_, c) => c - 1,
        }
    }

    fn value_text(&self, id: u32) -> String {
        format!("C{id:07}")
    }

    fn record(&self, value: &str, noise: u64) -> Vec<u8> {
        let sku = noise % 100_000;
        let qty = 1 + (noise >> 17) % 9;
        let cents = (noise >> 21) % 50_000;
        format!(
            r#"{{"customer":"{value}","sku":"SKU-{sku:05}","qty":{qty},"total":{}.{:02},"state":"{}"}}"#,
            cents / 100,
            cents % 100,
            pick(&STATES, noise >> 40)
        )
        .into_bytes()
    }
}
