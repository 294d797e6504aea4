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
pub const SEED: u64 = 0x5EED_0F_F11E5;

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
