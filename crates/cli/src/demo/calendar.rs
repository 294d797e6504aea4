//! Dates as days since 1970-01-01 (proleptic Gregorian), for the records'
//! `date` field and key prefix, without a date library.

/// Days since 1970-01-01 of `year-month-day` (Hinnant's `days_from_civil`).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let shifted_month = i64::from((month + 9) % 12); // March is 0
    let day_of_year = (153 * shifted_month + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// `YYYY-MM-DD` of a day counted from 1970-01-01 (Hinnant's `civil_from_days`).
pub fn iso_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Whether a day counted from 1970-01-01 (a Thursday) is a Saturday.
pub fn is_saturday(days: i64) -> bool {
    // Thursday + 2 days is Saturday.
    days.rem_euclid(7) == 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        let first = days_from_civil(2026, 12, 1);
        assert_eq!(iso_date(first), "2026-12-01");
        assert_eq!(iso_date(first + 31), "2027-01-01");
        assert_eq!(iso_date(days_from_civil(2028, 2, 29)), "2028-02-29");
        assert_eq!(iso_date(days_from_civil(2028, 2, 29) + 1), "2028-03-01");
    }

    #[test]
    fn knows_saturdays() {
        // 2026-12-05 is a Saturday; the 4th and the 6th are not.
        let friday = days_from_civil(2026, 12, 4);
        assert!(!is_saturday(friday));
        assert!(is_saturday(friday + 1));
        assert!(!is_saturday(friday + 2));
        assert!(is_saturday(friday + 8));
    }
}
