//! The engine's reports as Python dicts: `Db.stats()`, a search's
//! `explain()`, `Db.indexes()` and `verify`.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use siftdb::{FindStats, IndexInfo, Method, Stats, VerifyReport};

/// Sets each named field of `$from` as an item of `$dict`.
macro_rules! set_fields {
    ($dict:expr, $from:expr, $($field:ident),+ $(,)?) => {
        $( $dict.set_item(stringify!($field), &$from.$field)?; )+
    };
}

/// The name `find(method=...)` takes for `method`.
pub fn method_name(method: Method) -> &'static str {
    match method {
        Method::Scan => "scan",
        Method::BloomScan => "bloom-scan",
        Method::Hierarchy => "hierarchy",
        Method::Flat => "flat",
    }
}

/// A search's `explain()`.
pub fn find_stats<'py>(py: Python<'py>, stats: &FindStats) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("method", method_name(stats.method))?;
    set_fields!(
        dict,
        stats,
        planned,
        leaf_classes,
        inner_nodes_probed,
        leaves_probed,
        leaves_positive,
        words_anded,
        block_filters_probed,
        blocks_positive,
        tables_scanned,
        tables_unindexed,
        tables_matched,
        blocks_read,
        blocks_matched,
        entries_examined,
        memtable_entries_scanned,
        memtable_postings_read,
        read_whole,
        runs_read_whole,
        entries_validated,
        results,
        estimated_filtered_ns,
        estimated_scan_ns,
        estimated_read_whole_ns,
    );
    Ok(dict)
}

/// `Db.stats()`: the counters since open, one dict per level and per
/// value index.
pub fn db_stats<'py>(py: Python<'py>, stats: &Stats) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    set_fields!(
        dict,
        stats,
        gets,
        key_hashes,
        filter_probes,
        filter_negatives,
        filter_false_positives,
        data_blocks_read,
        memtable_hits,
        writes,
        write_groups,
        wal_syncs,
        write_stall_micros,
        flushes,
        compactions,
        compaction_bytes_written,
        filter_memory_resident,
        filter_memory_budget,
        wal_recovery,
    );
    let levels = PyList::empty(py);
    for level in &stats.levels {
        let entry = PyDict::new(py);
        set_fields!(
            entry,
            level,
            runs,
            tables,
            bytes,
            entries,
            tables_unread,
            distinct_keys,
            filter_bytes,
            filter_bits_per_key,
            filter_kind,
            filter_probes,
            filter_negatives,
            filter_false_positives,
            scan_filter_bytes,
            resident_bytes,
            metadata_bytes,
            metadata_loads,
            metadata_evictions,
            transient_loads,
            metadata_cache_hits,
            scan_filter_probes,
            scan_filter_empty,
            scan_filter_false_positives,
            bytes_written,
            compaction_bytes_read,
        );
        entry.set_item("observed_fpr", level.observed_fpr())?;
        levels.append(entry)?;
    }
    dict.set_item("levels", levels)?;
    let indexes = PyList::empty(py);
    for index in &stats.indexes {
        let entry = PyDict::new(py);
        set_fields!(
            entry,
            index,
            name,
            tables_indexed,
            tables_unindexed,
            distinct_values,
            values,
            target_fpr,
            leaf_bytes,
            leaf_bits_per_value,
            leaf_classes,
            measured_leaf_fpr,
            fpr_probes,
            block_filter_bytes,
            block_filter_bits_per_value,
        );
        indexes.append(entry)?;
    }
    dict.set_item("indexes", indexes)?;
    Ok(dict)
}

/// One value index of `Db.indexes()`.
pub fn index_info<'py>(py: Python<'py>, index: &IndexInfo) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    set_fields!(
        dict,
        index,
        name,
        id,
        extractor,
        tables_indexed,
        tables_missing,
        tables_unreadable,
    );
    dict.set_item("leaf_sizing", index.leaf_sizing.description())?;
    Ok(dict)
}

/// A verification's report: `clean`, the files and bytes checked, each
/// problem (`path`, `offset` or `None`, `detail`) and the notes.
pub fn verify_report<'py>(py: Python<'py>, report: &VerifyReport) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("clean", report.is_clean())?;
    set_fields!(dict, report, tables, logs, bytes, notes);
    let problems = PyList::empty(py);
    for problem in &report.problems {
        let entry = PyDict::new(py);
        entry.set_item("path", problem.path.to_string_lossy())?;
        entry.set_item("offset", problem.offset)?;
        entry.set_item("detail", &problem.detail)?;
        problems.append(entry)?;
    }
    dict.set_item("problems", problems)?;
    Ok(dict)
}
