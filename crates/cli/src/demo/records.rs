//! The demo's data set: one record per passenger on a flight, generated
//! deterministically from a seed, in key order.
//!
//! Key: `flight/<date>/<flight>/<booking>-<passenger>`, so one flight on
//! one day, or one whole day, is one contiguous key range. Value: a JSON
//! object with high-cardinality fields (`booking`: one per party of 1-4
//! passengers) and low-cardinality ones (`origin`: 100 airports, busiest
//! 100 times the quietest; `carrier`, `status`, `fare`).

use super::airports::{AIRPORTS, FARES};
use super::calendar;
use super::rng::{SplitMix64, mix};
use super::timetable::{self, Flight};

/// The seed of every demo data set: change it and every figure changes.
pub const SEED: u64 = 0x05EE_D0FF_11E5;

/// The first day of the data set (ski airports open on Saturdays in December).
pub const FIRST_DAY: (i64, u32, u32) = (2026, 12, 1);

/// Booking references: 6 characters from 32 that cannot be misread (no
/// I, O, 0 or 1), as airlines print them.
const BOOKING_ALPHABET: &[u8; 32] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/// Bits of a booking reference (6 characters of 5 bits).
const BOOKING_BITS: u32 = 30;

/// A reference no record has (it holds an `O`), for a search that must
/// find nothing.
pub const ABSENT_BOOKING: &str = "NOSUCH";

/// Party sizes 1-4 and their shares: mean 1.6 passengers per booking.
const PARTY_SIZES: [u32; 4] = [60, 25, 10, 5];

/// One stored entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The key.
    pub key: String,
    /// The JSON document.
    pub value: String,
}

/// The records, in key order, until `records` have been produced.
#[derive(Debug)]
pub struct Generator {
    rng: SplitMix64,
    timetable: Vec<Flight>,
    remaining: u64,
    day: i64,
    next_flight: usize,
    next_booking: u64,
    /// Records of the current flight, reversed (popped from the end).
    pending: Vec<Record>,
}

impl Generator {
    /// The first `records` records of the demo data set.
    pub fn new(records: u64) -> Self {
        let mut rng = SplitMix64::new(SEED);
        let timetable = timetable::build(&mut rng);
        let (year, month, day) = FIRST_DAY;
        Self {
            rng,
            timetable,
            remaining: records,
            day: calendar::days_from_civil(year, month, day),
            next_flight: 0,
            next_booking: 0,
            pending: Vec::new(),
        }
    }

    /// The flights, sorted by number.
    pub fn timetable(&self) -> &[Flight] {
        &self.timetable
    }

    /// Fills `pending` with the passengers of the next flight flown.
    fn next_flight(&mut self) {
        loop {
            if self.next_flight == self.timetable.len() {
                self.next_flight = 0;
                self.day += 1;
            }
            let index = self.next_flight;
            self.next_flight += 1;
            let Some(flight) = self.timetable.get(index) else {
                return;
            };
            if flight.saturdays_only && !calendar::is_saturday(self.day) {
                continue;
            }
            let flight = flight.clone();
            self.fly(&flight);
            return;
        }
    }

    /// The passengers of `flight` on the current day, into `pending`.
    fn fly(&mut self, flight: &Flight) {
        let rng = &mut self.rng;
        let date = calendar::iso_date(self.day);
        let (status, delay) = if rng.percent(2) {
            ("cancelled", 0)
        } else if rng.percent(18) {
            // Most delays are short; a quarter run into hours.
            let long = if rng.percent(25) { rng.below(180) } else { 0 };
            ("delayed", 15 + rng.below(46) + long)
        } else {
            ("on-time", rng.below(15))
        };
        let passengers = flight.seats * (60 + rng.below(41)) / 100;
        let party_weights = PARTY_SIZES;
        let fare_weights: Vec<u32> = FARES.iter().map(|f| f.1).collect();
        let mut seated = 0;
        let mut records = Vec::with_capacity(passengers as usize);
        while seated < passengers {
            let party = (rng.weighted(&party_weights) as u64 + 1).min(passengers - seated);
            let booking = booking_reference(self.next_booking);
            self.next_booking += 1;
            let fare = FARES[rng.weighted(&fare_weights)].0;
            for passenger in 1..=party {
                // Parties sit together, six seats a row.
                let seat = format!(
                    "{}{}",
                    1 + seated / 6,
                    char::from(b"ABCDEF"[(seated % 6) as usize])
                );
                seated += 1;
                records.push(Record {
                    key: format!("flight/{date}/{}/{booking}-{passenger}", flight.number),
                    value: format!(
                        concat!(
                            r#"{{"flight":"{}","carrier":"{}","date":"{}","departure":"{}","#,
                            r#""origin":"{}","dest":"{}","tail":"{}","aircraft":"{}","#,
                            r#""booking":"{}","passenger":{},"seat":"{}","fare":"{}","#,
                            r#""status":"{}","delay_min":{}}}"#
                        ),
                        flight.number,
                        flight.carrier,
                        date,
                        flight.departure,
                        AIRPORTS[flight.origin].code,
                        AIRPORTS[flight.dest].code,
                        flight.tail,
                        flight.aircraft,
                        booking,
                        passenger,
                        seat,
                        fare,
                        status,
                        delay,
                    ),
                });
            }
        }
        records.sort_by(|a, b| b.key.cmp(&a.key));
        self.pending = records;
    }
}

impl Iterator for Generator {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        if self.remaining == 0 {
            return None;
        }
        while self.pending.is_empty() {
            self.next_flight();
        }
        self.remaining -= 1;
        self.pending.pop()
    }
}

/// The booking reference of the `n`-th booking: `n` through a bijection of
/// 30-bit numbers (odd multipliers and xor-shifts), written in base 32.
/// Distinct for the first 2^30 bookings, and random-looking.
pub fn booking_reference(n: u64) -> String {
    let mask = (1u64 << BOOKING_BITS) - 1;
    let mut x = n.wrapping_add(mix(SEED)) & mask;
    x = x.wrapping_mul(0x2545_F491) & mask;
    x ^= x >> 15;
    x = x.wrapping_mul(0x1B87_3593) & mask;
    x ^= x >> 13;
    (0..6)
        .rev()
        .map(|i| char::from(BOOKING_ALPHABET[((x >> (5 * i)) & 31) as usize]))
        .collect()
}

#[cfg(test)]
mod tests {

    use std::collections::{BTreeMap, HashSet};

    use serde_json::Value;

    use super::*;
    use crate::demo::airports::ABSENT_AIRPORT;

    /// Records of about the first week (from 2026-12-01), Saturday the 5th included.
    const WEEK: u64 = 300_000;

    fn field(record: &Record, name: &str) -> Value {
        let value: Value = serde_json::from_str(&record.value).unwrap();
        value[name].clone()
    }

    #[test]
    fn the_first_record_is_pinned() {
        let first = Generator::new(1).next().unwrap();
        assert_eq!(first.key, "flight/2026-12-01/AA0001/33UNZG-1");
        assert_eq!(
            first.value,
            r#"{"flight":"AA0001","carrier":"AA","date":"2026-12-01","departure":"10:57","origin":"DFW","dest":"DEN","tail":"N100AA","aircraft":"CRJ9","booking":"33UNZG","passenger":1,"seat":"5E","fare":"Y","status":"on-time","delay_min":8}"#
        );
    }

    #[test]
    fn is_deterministic_and_stops_at_the_count() {
        let a: Vec<Record> = Generator::new(5_000).collect();
        let b: Vec<Record> = Generator::new(10_000).take(5_000).collect();
        assert_eq!(a.len(), 5_000);
        assert_eq!(a, b);
        assert_eq!(Generator::new(0).count(), 0);
    }

    #[test]
    fn a_week_is_in_key_order_with_the_claimed_shape() {
        let mut previous = String::new();
        let mut origins = BTreeMap::<String, u64>::new();
        let mut bookings = HashSet::new();
        let mut days = HashSet::new();
        for record in Generator::new(WEEK) {
            assert!(record.key > previous, "{} after {previous}", record.key);
            let value: Value = serde_json::from_str(&record.value).unwrap();
            let origin = value["origin"].as_str().unwrap().to_owned();
            let date = value["date"].as_str().unwrap().to_owned();
            let booking = value["booking"].as_str().unwrap().to_owned();
            let passenger = value["passenger"].as_u64().unwrap();
            assert!((1..=4).contains(&passenger));
            assert_eq!(
                record.key,
                format!(
                    "flight/{date}/{}/{booking}-{passenger}",
                    value["flight"].as_str().unwrap()
                )
            );
            let saturday = date == "2026-12-05";
            if ["EGE", "ASE", "HDN"].contains(&origin.as_str()) {
                assert!(saturday, "{origin} on {date}");
            }
            *origins.entry(origin).or_default() += 1;
            bookings.insert(booking);
            days.insert(date);
            previous = record.key;
        }
        assert!(
            (6..=8).contains(&days.len()) && days.contains("2026-12-05"),
            "{days:?}"
        );
        // Low cardinality: nearly all of the 100 airports, the busiest far
        // ahead of the quietest.
        assert_eq!(origins.len(), 100);
        assert!(!origins.contains_key(ABSENT_AIRPORT));
        let busiest = origins.values().max().unwrap();
        let quietest = origins.values().min().unwrap();
        assert!(busiest / quietest >= 20, "{busiest} vs {quietest}");
        assert!(origins.contains_key("HDN") || origins.contains_key("EGE"));
        // High cardinality: one booking per party of 1.6 passengers on average.
        let per_booking = WEEK as f64 / bookings.len() as f64;
        assert!(
            (1.5..1.75).contains(&per_booking),
            "{per_booking} passengers per booking"
        );
        assert!(!bookings.contains(ABSENT_BOOKING));
    }

    #[test]
    fn booking_references_are_distinct_and_readable() {
        let mut seen = HashSet::new();
        for n in 0..1_000_000 {
            let reference = booking_reference(n);
            assert_eq!(reference.len(), 6);
            assert!(reference.bytes().all(|b| BOOKING_ALPHABET.contains(&b)));
            assert!(seen.insert(reference));
        }
        assert!(
            ABSENT_BOOKING
                .bytes()
                .any(|b| !BOOKING_ALPHABET.contains(&b))
        );
    }

    #[test]
    fn statuses_and_fields_vary() {
        let records: Vec<Record> = Generator::new(50_000).collect();
        let distinct = |name: &str| {
            records
                .iter()
                .map(|r| field(r, name).to_string())
                .collect::<HashSet<_>>()
                .len()
        };
        assert_eq!(distinct("status"), 3);
        assert_eq!(distinct("fare"), 5);
        assert_eq!(distinct("carrier"), 8);
        assert!(distinct("tail") > 50);
        assert!(distinct("delay_min") > 30);
    }
}
