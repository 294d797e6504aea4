//! Tables shared by `sift stats` and `sift demo`: the levels with their
//! filters, and the value indexes.

use serde_json::{Value, json};
use siftdb::{FindStats, IndexInfo, IndexStats, LeafSizing, LevelStats, Method, Stats};

use crate::error::Outcome;
use crate::output::Output;

/// Prints one row per non-empty level: tables, bytes, key filter, and what
/// the filters answered since the database was opened.
pub fn levels(out: &mut Output, stats: &Stats) -> Outcome {
    if out.json {
        let levels = nonempty_levels(stats)
            .map(|(level, s)| level_json(level, s))
            .collect();
        return out.json_line(&json!({ "levels": Value::Array(levels) }));
    }
    out.line(format!(
        "{:<5} {:>6} {:>10} {:>10}  {:<20} {:>8} {:>9} {:>9} {:>8}  {:>10} {:>9} {:>9} {:>8}",
        "level",
        "tables",
        "bytes",
        "keys",
        "key filter",
        "bits/key",
        "probes",
        "said no",
        "FPR",
        "scan filt.",
        "scans",
        "empty",
        "FP"
    ))?;
    for (level, s) in nonempty_levels(stats) {
        out.line(format!(
            "L{level:<4} {:>6} {:>10} {:>10}  {:<20} {:>8.2} {:>9} {:>9} {:>8}  {:>10} {:>9} {:>9} {:>8}",
            s.tables,
            human_bytes(s.bytes),
            s.distinct_keys,
            s.filter_kind,
            s.filter_bits_per_key,
            s.filter_probes,
            s.filter_negatives,
            s.observed_fpr()
                .map_or("-".into(), |fpr| format!("{:.3}%", fpr * 100.0)),
            human_bytes(s.scan_filter_bytes),
            s.scan_filter_probes,
            s.scan_filter_empty,
            s.scan_filter_false_positives,
        ))?;
    }
    out.line(
        "(scan filt.: prefix and range filter bytes; scans: bounded or prefix scans that asked \
         them; empty: tables skipped; FP: tables read that held nothing in the scan's bounds)",
    )?;
    let total = |field: fn(&LevelStats) -> u64| stats.levels.iter().map(field).sum::<u64>();
    let unread: usize = stats.levels.iter().map(|l| l.tables_unread).sum();
    out.line(format!(
        "table metadata in memory: {} of {} budget ({} with every index and filter partition \
         resident); {} loads, {} evictions, {} transient loads, {} served by the block cache{}",
        human_bytes(stats.filter_memory_resident),
        human_bytes(stats.filter_memory_budget),
        human_bytes(total(|l| l.metadata_bytes)),
        total(|l| l.metadata_loads),
        total(|l| l.metadata_evictions),
        total(|l| l.transient_loads),
        total(|l| l.metadata_cache_hits),
        if unread > 0 {
            format!("; {unread} tables not read since open (left out above)")
        } else {
            String::new()
        },
    ))
}

/// Prints one row per value index: what it extracts and how many tables carry its filter.
pub fn indexes(out: &mut Output, indexes: &[IndexInfo]) -> Outcome {
    if out.json {
        let list = indexes.iter().map(index_json).collect();
        return out.json_line(&json!({ "indexes": Value::Array(list) }));
    }
    if indexes.is_empty() {
        return out.line("no value indexes");
    }
    out.line(format!(
        "{:<16} {:<28} {:<24} {:>8} {:>8} {:>10}",
        "index", "extracts", "leaves", "indexed", "pending", "unreadable"
    ))?;
    for index in indexes {
        out.line(format!(
            "{:<16} {:<28} {:<24} {:>8} {:>8} {:>10}",
            index.name,
            index.extractor,
            index.leaf_sizing.description(),
            index.tables_indexed,
            index.tables_missing,
            index.tables_unreadable,
        ))?;
    }
    Ok(())
}

/// One value index as JSON.
pub fn index_json(index: &IndexInfo) -> Value {
    json!({
        "name": index.name,
        "id": index.id,
        "extractor": index.extractor,
        "leaf_sizing": index.leaf_sizing.description(),
        "leaf_fpr_target": index.leaf_sizing.target_fpr(),
        "leaf_bits": match index.leaf_sizing {
            LeafSizing::Fixed(shape) => Some(shape.bits),
            _ => None,
        },
        "tables_indexed": index.tables_indexed,
        "tables_missing": index.tables_missing,
        "tables_unreadable": index.tables_unreadable,
    })
}

/// Prints one row per value index: its filters' sizes and the measured
/// false-positive rate of its leaves.
pub fn index_filters(out: &mut Output, indexes: &[IndexStats]) -> Outcome {
    if indexes.is_empty() {
        return Ok(());
    }
    out.line(format!(
        "{:<16} {:>7} {:>11} {:>11} {:>10} {:>9} {:>8} {:>9} {:>10} {:>10} {:>9}",
        "index",
        "tables",
        "values",
        "distinct",
        "leaf bytes",
        "bits/dist",
        "classes",
        "FPR goal",
        "FPR meas.",
        "blk bytes",
        "bits/val"
    ))?;
    for s in indexes {
        out.line(format!(
            "{:<16} {:>7} {:>11} {:>11} {:>10} {:>9.2} {:>8} {:>8.2}% {:>9.3}% {:>10} {:>9.2}",
            s.name,
            s.tables_indexed,
            s.values,
            s.distinct_values,
            human_bytes(s.leaf_bytes),
            s.leaf_bits_per_value,
            s.leaf_classes,
            s.target_fpr * 100.0,
            s.measured_leaf_fpr * 100.0,
            human_bytes(s.block_filter_bytes),
            s.block_filter_bits_per_value,
        ))?;
    }
    out.line(
        "(bits/dist: leaf bits per distinct value of a table; FPR meas.: each leaf probed with \
         the same 1,024 values no table holds; blk: the filters per data block, bits per value \
         extracted)",
    )
}

/// One value index's filters as JSON.
pub fn index_filters_json(s: &IndexStats) -> Value {
    json!({
        "name": s.name,
        "tables_indexed": s.tables_indexed,
        "tables_unindexed": s.tables_unindexed,
        "values": s.values,
        "distinct_values": s.distinct_values,
        "leaf_bytes": s.leaf_bytes,
        "leaf_bits_per_value": s.leaf_bits_per_value,
        "leaf_classes": s.leaf_classes,
        "target_fpr": s.target_fpr,
        "measured_leaf_fpr": s.measured_leaf_fpr,
        "fpr_probes": s.fpr_probes,
        "block_filter_bytes": s.block_filter_bytes,
        "block_filter_bits_per_value": s.block_filter_bits_per_value,
    })
}

/// The non-empty levels as a JSON array.
pub fn levels_json(stats: &Stats) -> Value {
    nonempty_levels(stats)
        .map(|(level, s)| level_json(level, s))
        .collect()
}

/// Levels that hold tables, with their numbers.
fn nonempty_levels(stats: &Stats) -> impl Iterator<Item = (usize, &LevelStats)> {
    stats
        .levels
        .iter()
        .enumerate()
        .filter(|(_, s)| s.tables > 0)
}

/// One level as JSON.
fn level_json(level: usize, s: &LevelStats) -> Value {
    json!({
        "level": level,
        "runs": s.runs,
        "tables": s.tables,
        "bytes": s.bytes,
        "entries": s.entries,
        "distinct_keys": s.distinct_keys,
        "filter_kind": s.filter_kind,
        "filter_bytes": s.filter_bytes,
        "filter_bits_per_key": s.filter_bits_per_key,
        "filter_probes": s.filter_probes,
        "filter_negatives": s.filter_negatives,
        "filter_false_positives": s.filter_false_positives,
        "observed_fpr": s.observed_fpr(),
        "scan_filter_bytes": s.scan_filter_bytes,
        "scan_filter_probes": s.scan_filter_probes,
        "scan_filter_empty": s.scan_filter_empty,
        "scan_filter_false_positives": s.scan_filter_false_positives,
        "bytes_written": s.bytes_written,
        "compaction_bytes_read": s.compaction_bytes_read,
        "tables_unread": s.tables_unread,
        "resident_bytes": s.resident_bytes,
        "metadata_bytes": s.metadata_bytes,
        "metadata_loads": s.metadata_loads,
        "metadata_evictions": s.metadata_evictions,
        "transient_loads": s.transient_loads,
        "metadata_cache_hits": s.metadata_cache_hits,
    })
}

/// `bytes` with a binary unit (`12.3 MiB`).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut size = bytes as f64;
    let mut unit = 0;
    while size >= 1024.0 && unit + 1 < UNITS.len() {
        size /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{size:.1} {}", UNITS[unit])
    }
}

/// A search method's name as the command line spells it.
pub fn method_name(method: Method) -> &'static str {
    match method {
        Method::Scan => "scan",
        Method::BloomScan => "bloom-scan",
        Method::Hierarchy => "hierarchy",
        Method::Flat => "flat",
    }
}

/// What one search by value did, as JSON; `tables` is how many tables the
/// database had.
pub fn explain_json(stats: &FindStats, tables: usize) -> Value {
    json!({
        "method": method_name(stats.method),
        "planned": stats.planned,
        "tables": tables,
        "leaf_classes": stats.leaf_classes,
        "inner_nodes_probed": stats.inner_nodes_probed,
        "leaves_probed": stats.leaves_probed,
        "leaves_positive": stats.leaves_positive,
        "words_anded": stats.words_anded,
        "block_filters_probed": stats.block_filters_probed,
        "blocks_positive": stats.blocks_positive,
        "tables_scanned": stats.tables_scanned,
        "tables_unindexed": stats.tables_unindexed,
        "tables_matched": stats.tables_matched,
        "blocks_read": stats.blocks_read,
        "blocks_matched": stats.blocks_matched,
        "entries_examined": stats.entries_examined,
        "memtable_entries_scanned": stats.memtable_entries_scanned,
        "memtable_postings_read": stats.memtable_postings_read,
        "read_whole": stats.read_whole,
        "runs_read_whole": stats.runs_read_whole,
        "entries_validated": stats.entries_validated,
        "results": stats.results,
        "estimated_filtered_ns": stats.estimated_filtered_ns,
        "estimated_scan_ns": stats.estimated_scan_ns,
        "estimated_read_whole_ns": stats.estimated_read_whole_ns,
    })
}

/// What one search by value did, in a few sentences.
pub fn explain_line(stats: &FindStats, tables: usize) -> String {
    let leaves = match stats.method {
        Method::Flat => format!(
            "{} filter words ANDed, {} tables said maybe",
            stats.words_anded, stats.leaves_positive
        ),
        _ => format!(
            "{} inner nodes and {} table filters probed, {} said maybe",
            stats.inner_nodes_probed, stats.leaves_probed, stats.leaves_positive
        ),
    };
    let probed = stats.leaves_probed + stats.words_anded + stats.inner_nodes_probed > 0;
    let filters = match (stats.method, probed) {
        (Method::Scan, false) => "no value filter read".to_owned(),
        (Method::Scan, true) => format!(
            "probed, then scanned (estimates: {} µs through the filters, {} µs by scan)",
            stats.estimated_filtered_ns / 1_000,
            stats.estimated_scan_ns / 1_000
        ),
        _ => format!(
            "{leaves}; {} block filters probed, {} blocks said maybe",
            stats.block_filters_probed, stats.blocks_positive
        ),
    };
    let whole = if stats.read_whole {
        format!(
            "memtables and {} newest runs read whole, older runs by candidate blocks; ",
            stats.runs_read_whole
        )
    } else {
        String::new()
    };
    format!(
        "{}: {filters}; {whole}read {} blocks of {} of {tables} tables ({} without a filter; {} blocks \
         and {} tables held the value); {} entries examined, {} memtable entries scanned, {} \
         memtable keys looked up through their postings, {} validated; {} results",
        method_name(stats.method),
        stats.blocks_read,
        stats.tables_scanned,
        stats.tables_unindexed,
        stats.blocks_matched,
        stats.tables_matched,
        stats.entries_examined,
        stats.memtable_entries_scanned,
        stats.memtable_postings_read,
        stats.entries_validated,
        stats.results,
    )
}

/// Tables in the database.
pub fn table_count(stats: &Stats) -> usize {
    stats.levels.iter().map(|level| level.tables).sum()
}
