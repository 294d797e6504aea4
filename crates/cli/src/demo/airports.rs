//! The reference data the generator draws from: US airports with their
//! rough share of traffic, carriers, aircraft and fare classes.

/// An airport: IATA code, relative popularity, and whether it is only
/// served on Saturdays (ski resorts in December).
#[derive(Clone, Copy, Debug)]
pub struct Airport {
    /// IATA code.
    pub code: &'static str,
    /// Relative popularity: roughly annual passengers in hundreds of
    /// thousands, so that ATL is about 100 times SBA, as in real traffic.
    pub weight: u32,
    /// Flights to or from it operate on Saturdays only.
    pub saturdays_only: bool,
}

/// Shorthand for a year-round airport.
const fn daily(code: &'static str, weight: u32) -> Airport {
    Airport {
        code,
        weight,
        saturdays_only: false,
    }
}

/// Shorthand for a ski airport served on winter Saturdays.
const fn saturdays(code: &'static str, weight: u32) -> Airport {
    Airport {
        code,
        weight,
        saturdays_only: true,
    }
}

/// 100 airports, busiest first. Weights approximate annual passengers
/// (hundreds of thousands), rounded: the skew, not the exact figures,
/// is what matters.
pub const AIRPORTS: [Airport; 100] = [
    daily("ATL", 500),
    daily("DFW", 400),
    daily("DEN", 380),
    daily("ORD", 370),
    daily("LAX", 370),
    daily("JFK", 310),
    daily("LAS", 280),
    daily("MCO", 280),
    daily("MIA", 260),
    daily("CLT", 250),
    daily("SEA", 250),
    daily("PHX", 240),
    daily("EWR", 240),
    daily("SFO", 240),
    daily("IAH", 220),
    daily("BOS", 200),
    daily("MSP", 180),
    daily("FLL", 170),
    daily("LGA", 160),
    daily("DTW", 160),
    daily("PHL", 140),
    daily("SLC", 130),
    daily("BWI", 130),
    daily("DCA", 120),
    daily("SAN", 120),
    daily("IAD", 120),
    daily("TPA", 110),
    daily("AUS", 110),
    daily("BNA", 110),
    daily("MDW", 110),
    daily("HNL", 100),
    daily("DAL", 80),
    daily("PDX", 80),
    daily("STL", 80),
    daily("RDU", 70),
    daily("HOU", 70),
    daily("SMF", 70),
    daily("MSY", 70),
    daily("SJC", 60),
    daily("SJU", 60),
    daily("MCI", 60),
    daily("SNA", 50),
    daily("OAK", 50),
    daily("SAT", 50),
    daily("RSW", 50),
    daily("CLE", 50),
    daily("IND", 50),
    daily("PIT", 50),
    daily("CVG", 40),
    daily("CMH", 40),
    daily("PBI", 40),
    daily("OGG", 40),
    daily("JAX", 30),
    daily("ONT", 30),
    daily("BUR", 30),
    daily("MKE", 30),
    daily("ABQ", 30),
    daily("ANC", 30),
    daily("BDL", 30),
    daily("CHS", 30),
    daily("OMA", 20),
    daily("RNO", 20),
    daily("BOI", 20),
    daily("SDF", 20),
    daily("RIC", 20),
    daily("ELP", 20),
    daily("TUS", 20),
    daily("BUF", 20),
    daily("OKC", 20),
    daily("ORF", 20),
    daily("MEM", 20),
    daily("SAV", 20),
    daily("GRR", 20),
    daily("PVD", 20),
    daily("KOA", 20),
    daily("GEG", 18),
    daily("BHM", 15),
    daily("ALB", 15),
    daily("LIH", 15),
    daily("TUL", 15),
    daily("MYR", 15),
    daily("PSP", 15),
    daily("LGB", 15),
    daily("DSM", 14),
    daily("SYR", 13),
    daily("GSP", 13),
    daily("PNS", 13),
    daily("SRQ", 13),
    daily("LIT", 12),
    daily("ROC", 12),
    daily("COS", 10),
    daily("BZN", 10),
    daily("MSN", 10),
    daily("FAT", 10),
    daily("XNA", 9),
    daily("ICT", 9),
    daily("SBA", 5),
    saturdays("EGE", 20),
    saturdays("ASE", 15),
    saturdays("HDN", 10),
];

/// An IATA code the data set never contains (London Heathrow: the demo's
/// airports are domestic), for a search that must find nothing.
pub const ABSENT_AIRPORT: &str = "LHR";

/// Carriers: code, tail-number suffix, relative share of flights.
pub const CARRIERS: [(&str, &str, u32); 8] = [
    ("AA", "AA", 24),
    ("DL", "DL", 22),
    ("UA", "UA", 22),
    ("WN", "WN", 18),
    ("B6", "JB", 5),
    ("AS", "AS", 5),
    ("NK", "NK", 2),
    ("F9", "FR", 2),
];

/// Aircraft types: ICAO designator, seats, relative share of the fleet.
pub const AIRCRAFT: [(&str, u64, u32); 6] = [
    ("B738", 166, 30),
    ("A320", 150, 25),
    ("A321", 190, 15),
    ("B739", 179, 10),
    ("E175", 76, 12),
    ("CRJ9", 76, 8),
];

/// Fare classes and their relative share of passengers.
pub const FARES: [(&str, u32); 5] = [("Y", 50), ("M", 20), ("B", 15), ("J", 10), ("F", 5)];

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn codes_are_distinct_iata_codes() {
        let codes: HashSet<&str> = AIRPORTS.iter().map(|a| a.code).collect();
        assert_eq!(codes.len(), AIRPORTS.len());
        assert!(
            codes
                .iter()
                .all(|c| c.len() == 3 && c.bytes().all(|b| b.is_ascii_uppercase()))
        );
        assert!(!codes.contains(ABSENT_AIRPORT));
        assert!(
            AIRPORTS
                .windows(2)
                .all(|w| w[0].weight >= w[1].weight || w[1].saturdays_only)
        );
    }
}
