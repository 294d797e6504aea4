//! The demo's report: a few plain sentences per section and aligned
//! figures, or with `--json` one JSON object per section (its only key
//! names the section, as `sift stats --json` does for `levels`).

use std::time::Duration;

use serde_json::{Value, json};
use siftdb::FindStats;

use super::load::LoadFigures;
use super::reads::{LookupFigures, RangeFigures};
use super::search::SearchFigures;
use crate::error::Outcome;
use crate::output::Output;
use crate::report::human_bytes;

/// Prints the explanation lines, in text mode only.
pub fn say(out: &mut Output, lines: &[&str]) -> Outcome {
    if out.json {
        return Ok(());
    }
    for line in lines {
        out.line(*line)?;
    }
    Ok(())
}

/// A section heading (text mode only).
pub fn heading(out: &mut Output, title: &str) -> Outcome {
    say(out, &["", &format!("== {title}")])
}

/// The opening lines.
pub fn intro(out: &mut Output, records: u64, dir: &str, seed: u64) -> Outcome {
    if out.json {
        return out.json_line(&json!({ "demo": { "records": records, "dir": dir, "seed": seed } }));
    }
    out.line(format!(
        "Sift demo: {} flight bookings, generated from a fixed seed (the same every run), in {dir}.",
        thousands(records)
    ))?;
    say(
        out,
        &[
            "Sift is a key-value store that keeps small filters in front of each of its table files:",
            "a lookup skips every table whose key filter says \"not here\", and a search by value",
            "skips every table whose value filter says the same.",
        ],
    )
}

/// Section 1: what was loaded and how long it took.
pub fn load(out: &mut Output, f: &LoadFigures, example: (&str, &str), tables: u64) -> Outcome {
    let rate = f.records as f64 / f.insert_seconds.max(1e-9);
    if out.json {
        return out.json_line(&json!({ "load": {
            "records": f.records,
            "bytes": f.bytes,
            "insert_seconds": f.insert_seconds,
            "records_per_second": rate,
            "settle_seconds": f.settle_seconds,
            "index_sync_seconds": f.index_sync_seconds.iter()
                .map(|(name, seconds)| (name.to_string(), json!(seconds)))
                .collect::<serde_json::Map<_, _>>(),
            "table_bytes": f.table_bytes,
            "tables": tables,
            "example_key": example.0,
            "example_value": example.1,
        }}));
    }
    heading(out, "1. Load")?;
    say(
        out,
        &[
            "Each record is one passenger on one flight: a key that sorts by date, then flight, and a",
            "JSON value. Loading was followed by a flush and a wait for compactions, so everything",
            "below reads one settled set of tables.",
        ],
    )?;
    out.line(format!("  example key     {}", example.0))?;
    out.line(format!("  example value   {}", example.1))?;
    out.line(format!(
        "  loaded          {} records, {} of keys and values, in {:.2} s ({} records/s)",
        thousands(f.records),
        human_bytes(f.bytes),
        f.insert_seconds,
        thousands(rate as u64)
    ))?;
    out.line(format!(
        "  settled         in {:.2} s more: {tables} tables (memtables and tables of {}; levels in section 5)",
        f.settle_seconds,
        human_bytes(f.table_bytes)
    ))?;
    let synced: Vec<String> = f
        .index_sync_seconds
        .iter()
        .map(|(name, seconds)| format!("{name} {} ms", decimal(seconds * 1e3, 1)))
        .collect();
    out.line(format!(
        "  indexes synced  {}: their in-memory filter structures brought up",
        synced.join(", ")
    ))?;
    say(
        out,
        &[
            "                  to date (the first search after tables change does it; the searches",
            "                  below come after it)",
            "",
            "Two value indexes were declared before loading; every table carries one value filter",
            "(a Bloom filter over the values it holds) per index:",
        ],
    )
}

/// Section 2: point lookups.
pub fn lookups(out: &mut Output, rows: &[LookupFigures]) -> Outcome {
    if out.json {
        let rows = rows.iter().map(|r| {
            json!({
                "keys": r.keys,
                "lookups": r.lookups,
                "found": r.found,
                "nanos_per_lookup": r.nanos_per_lookup,
                "filter_probes": r.filter_probes,
                "filter_negatives": r.filter_negatives,
                "false_positives": r.false_positives,
                "data_blocks_read": r.data_blocks_read,
            })
        });
        return out.json_line(&json!({ "lookups": rows.collect::<Vec<_>>() }));
    }
    heading(out, "2. Key lookups")?;
    say(
        out,
        &[
            "A lookup hashes its key once and asks the key filter of each table whose key range covers",
            "it (here about one: the keys were loaded in order, so each level holds its own span of",
            "dates). A \"no\" means that table's data block is not read: a missing key costs a filter",
            "probe and almost never a block, which is why it is so much cheaper than a present one.",
        ],
    )?;
    out.line(format!(
        "  {:<8} {:>8} {:>8} {:>10} {:>9} {:>9} {:>10} {:>12} {:>13}",
        "keys",
        "lookups",
        "found",
        "ns/lookup",
        "probes",
        "said no",
        "false pos",
        "blocks read",
        "blocks/lookup"
    ))?;
    for r in rows {
        out.line(format!(
            "  {:<8} {:>8} {:>8} {:>10} {:>9} {:>9} {:>10} {:>12} {:>13.3}",
            r.keys,
            thousands(r.lookups),
            thousands(r.found),
            thousands(r.nanos_per_lookup.round() as u64),
            thousands(r.filter_probes),
            thousands(r.filter_negatives),
            thousands(r.false_positives),
            thousands(r.data_blocks_read),
            per(r.data_blocks_read, r.lookups),
        ))?;
    }
    Ok(())
}

/// Section 3: range scans.
pub fn ranges(out: &mut Output, rows: &[RangeFigures]) -> Outcome {
    if out.json {
        let rows = rows.iter().map(|r| {
            json!({
                "range": r.what,
                "example": r.example,
                "scans": r.scans,
                "records": r.records,
                "nanos_per_scan": r.nanos_per_scan,
            })
        });
        return out.json_line(&json!({ "ranges": rows.collect::<Vec<_>>() }));
    }
    heading(out, "3. Range scans")?;
    say(
        out,
        &[
            "Keys are stored in order, so the passengers of one flight on one day, or of a whole day,",
            "are one contiguous range: a seek, then sequential reads.",
        ],
    )?;
    out.line(format!(
        "  {:<22} {:>6} {:>13} {:>10}  {}",
        "range", "scans", "records/scan", "µs/scan", "example prefix"
    ))?;
    for r in rows {
        out.line(format!(
            "  {:<22} {:>6} {:>13} {:>10}  {}",
            r.what,
            thousands(r.scans),
            thousands(per(r.records, r.scans).round() as u64),
            decimal(r.nanos_per_scan / 1e3, 1),
            r.example
        ))?;
    }
    Ok(())
}

/// Section 4: searches by value, filters against a full scan.
pub fn searches(out: &mut Output, rows: &[SearchFigures]) -> Outcome {
    if out.json {
        let rows = rows.iter().map(|r| {
            json!({
                "index": r.query.index,
                "value": r.query.value,
                "kind": r.query.label,
                "tables": r.tables,
                "results": r.filtered.0.results,
                "filtered": explain_json(&r.filtered, r.tables),
                "scan": explain_json(&r.scan, r.tables),
                "speedup": r.speedup(),
            })
        });
        return out.json_line(&json!({ "searches": rows.collect::<Vec<_>>() }));
    }
    heading(out, "4. Search by value")?;
    say(
        out,
        &[
            "A search asks each table's value filter whether the table may hold the value, then, in",
            "each table that says \"maybe\", the filter of every data block, and reads only the blocks",
            "that say \"maybe\"; the baseline scans every table. Both returned exactly the same records",
            "(checked). Filters help most for rare values; a value in nearly every block leaves little",
            "to skip, and where the measured costs say a scan is cheaper the planner scans.",
        ],
    )?;
    out.line(format!(
        "  {:<8} {:<7} {:<30} {:>7} {:>19} {:>11} {:>10} {:>11}",
        "index",
        "value",
        "what",
        "results",
        "blocks (tables) read",
        "filters ms",
        "scan ms",
        "speed-up"
    ))?;
    for r in rows {
        out.line(format!(
            "  {:<8} {:<7} {:<30} {:>7} {:>19} {:>11} {:>10} {:>11}",
            r.query.index,
            r.query.value,
            r.query.label,
            thousands(r.filtered.0.results),
            format!(
                "{} ({} of {})",
                thousands(r.filtered.0.blocks_read),
                r.filtered.0.tables_scanned,
                r.tables
            ),
            decimal(r.filtered.1.as_secs_f64() * 1e3, 3),
            decimal(r.scan.1.as_secs_f64() * 1e3, 1),
            format!("{}x", thousands(r.speedup().round() as u64)),
        ))?;
    }
    say(
        out,
        &[
            "",
            "Explain: how each search went through the filters. The planner probes the table filters",
            "first (flat ANDs a few rows of bits covering every table at once, hierarchy descends a",
            "tree of OR-ed filters, bloom-scan asks each table's filter), then the block filters of",
            "the tables that said maybe; scan means it then judged a full scan cheaper. False",
            "positives are blocks read that held no match.",
        ],
    )?;
    out.line(format!(
        "  {:<8} {:<7} {:<10} {:>7} {:>7} {:>7} {:>9} {:>9} {:>8} {:>9} {:>9}",
        "index",
        "value",
        "method",
        "probed",
        "ANDed",
        "maybe",
        "blk maybe",
        "blk read",
        "matched",
        "false pos",
        "validated"
    ))?;
    for r in rows {
        let s = &r.filtered.0;
        out.line(format!(
            "  {:<8} {:<7} {:<10} {:>7} {:>7} {:>7} {:>9} {:>9} {:>8} {:>9} {:>9}",
            r.query.index,
            r.query.value,
            crate::report::method_name(s.method),
            thousands(s.leaves_probed + s.inner_nodes_probed),
            thousands(s.words_anded),
            thousands(s.leaves_positive),
            thousands(s.blocks_positive),
            thousands(s.blocks_read),
            thousands(s.blocks_matched),
            false_positives(s),
            thousands(s.entries_validated),
        ))?;
    }
    say(
        out,
        &[
            "  (probed: table filters tested one by one, tree nodes included; ANDed: 64-bit words of",
            "  the flat layout; maybe: tables the filters kept; blk: data blocks; validated: records",
            "  found, checked against their newest version)",
        ],
    )
}

/// The closing line.
pub fn summary(out: &mut Output, seconds: f64, dir: &str, kept: bool) -> Outcome {
    if out.json {
        return out
            .json_line(&json!({ "summary": { "seconds": seconds, "dir": dir, "kept": kept } }));
    }
    let fate = if kept {
        "was kept (open it with `sift --db <dir> ...`)".to_owned()
    } else {
        "was deleted (--keep leaves it)".to_owned()
    };
    out.line("")?;
    out.line(format!(
        "Done in {seconds:.1} s. The database in {dir} {fate}."
    ))
}

/// Blocks the filters kept that held no match; "-" for a scan.
fn false_positives(s: &FindStats) -> String {
    if s.method == siftdb::Method::Scan {
        "-".into()
    } else {
        thousands(s.blocks_read.saturating_sub(s.blocks_matched))
    }
}

/// One search's explain output as JSON (as `sift find --explain --json`
/// prints it), with its time.
fn explain_json((stats, time): &(FindStats, Duration), tables: u64) -> Value {
    let mut explain = crate::report::explain_json(stats, tables as usize);
    explain["nanos"] = json!(time.as_nanos() as u64);
    explain
}

/// `a / b` as a float (0 when `b` is 0).
fn per(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// `x` with `places` decimals and its integer part grouped (`10,931.3`).
fn decimal(x: f64, places: usize) -> String {
    let text = format!("{:.*}", places, x.max(0.0));
    match text.split_once('.') {
        Some((whole, fraction)) => {
            format!("{}.{fraction}", thousands(whole.parse().unwrap_or(0)))
        }
        None => thousands(text.parse().unwrap_or(0)),
    }
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

#[cfg(test)]
mod tests {
    use super::{decimal, thousands};

    #[test]
    fn groups_thousands() {
        assert_eq!(decimal(10_931.34, 1), "10,931.3");
        assert_eq!(decimal(0.0021, 3), "0.002");
        assert_eq!(decimal(12.5, 0), "12");
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
