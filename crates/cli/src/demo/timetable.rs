//! The demo airline network: a fixed set of flights flown every day (or
//! every Saturday, to and from ski airports), drawn once from the seed.

use super::airports::{AIRCRAFT, AIRPORTS, CARRIERS};
use super::rng::{SplitMix64, mix};

/// Scheduled flights: about 48,000 passengers a day at 80% load, so the
/// default 1,000,000 records span three weeks (three Saturdays).
pub const FLIGHTS: usize = 400;

/// Legs an aircraft flies a day: consecutive flights of a carrier share a
/// tail number in groups of this size.
const LEGS_PER_AIRCRAFT: usize = 4;

/// Flight numbers run 1..=FLIGHT_NUMBERS per carrier (a prime, so a
/// stride walk visits each once).
const FLIGHT_NUMBERS: usize = 2_999;

/// Tail numbers run N100..N999 per carrier.
const TAIL_NUMBERS: usize = 900;

/// One scheduled flight.
#[derive(Clone, Debug)]
pub struct Flight {
    /// `UA0123`.
    pub number: String,
    /// Carrier code (`UA`).
    pub carrier: &'static str,
    /// Index into [`AIRPORTS`].
    pub origin: usize,
    /// Index into [`AIRPORTS`], never `origin`.
    pub dest: usize,
    /// Scheduled departure, `HH:MM`.
    pub departure: String,
    /// The aircraft's registration (`N482UA`).
    pub tail: String,
    /// ICAO type (`B738`).
    pub aircraft: &'static str,
    /// Seats on board.
    pub seats: u64,
    /// Flown on Saturdays only (a ski airport at either end).
    pub saturdays_only: bool,
}

/// The timetable, sorted by flight number (the order of keys in a day).
pub fn build(rng: &mut SplitMix64) -> Vec<Flight> {
    let carrier_weights: Vec<u32> = CARRIERS.iter().map(|c| c.2).collect();
    let airport_weights: Vec<u32> = AIRPORTS.iter().map(|a| a.weight).collect();
    let aircraft_weights: Vec<u32> = AIRCRAFT.iter().map(|a| a.2).collect();
    let mut per_carrier = [0usize; CARRIERS.len()];
    let mut flights = Vec::with_capacity(FLIGHTS);
    for i in 0..FLIGHTS {
        let c = rng.weighted(&carrier_weights);
        let (carrier, suffix, _) = CARRIERS[c];
        let nth = per_carrier[c];
        per_carrier[c] += 1;
        // Every airport has at least one departure; the rest follow traffic.
        let origin = if i < AIRPORTS.len() {
            i
        } else {
            rng.weighted(&airport_weights)
        };
        let mut dest = rng.weighted(&airport_weights);
        while dest == origin {
            dest = rng.weighted(&airport_weights);
        }
        // A stride coprime with the modulus: distinct numbers, not in order.
        let number = 1 + (nth * 719 + c * 97) % FLIGHT_NUMBERS;
        let aircraft_id = nth / LEGS_PER_AIRCRAFT;
        let tail = 100 + (aircraft_id * 337) % TAIL_NUMBERS;
        // The type belongs to the aircraft, not to the flight.
        let mut aircraft_rng = SplitMix64::new(mix((c * TAIL_NUMBERS + tail) as u64));
        let (aircraft, seats, _) = AIRCRAFT[aircraft_rng.weighted(&aircraft_weights)];
        let minute = 5 * 60 + rng.below(18 * 60);
        flights.push(Flight {
            number: format!("{carrier}{number:04}"),
            carrier,
            origin,
            dest,
            departure: format!("{:02}:{:02}", minute / 60, minute % 60),
            tail: format!("N{tail}{suffix}"),
            aircraft,
            seats,
            saturdays_only: AIRPORTS[origin].saturdays_only || AIRPORTS[dest].saturdays_only,
        });
    }
    flights.sort_by(|a, b| a.number.cmp(&b.number));
    flights
}
