//! `sift dump-sst`: a table file's properties, filters and entries.

use serde_json::{Value, json};
use siftdb::{TableFile, TableSummary};

use crate::cli::DumpSstArgs;
use crate::error::{Context, Outcome};
use crate::output::Output;
use crate::report::human_bytes;

/// Prints the table's summary, then its entries (every version and tombstone).
pub fn run(args: &DumpSstArgs, out: &mut Output) -> Outcome {
    let path = &args.file;
    let table = TableFile::open(path).context(format_args!("opening {}", path.display()))?;
    let p = table.properties();
    if out.json {
        out.json_line(&json!({ "properties": properties_json(&p, out) }))?;
    } else {
        properties_text(&p, path, out)?;
    }
    if args.summary {
        return Ok(());
    }
    for entry in table.entries().take(args.limit.unwrap_or(usize::MAX)) {
        let (key, seq, value) = entry?;
        if out.json {
            let value = value.as_deref().map_or(Value::Null, |v| out.json_bytes(v));
            out.json_line(&json!({ "key": out.render(&key), "seq": seq, "value": value }))?;
        } else {
            let value = value
                .as_deref()
                .map_or("(deleted)".into(), |v| out.render(v));
            out.line(format!("{} @{seq}\t{value}", out.render(&key)))?;
        }
    }
    Ok(())
}

/// The summary as aligned lines.
fn properties_text(p: &TableSummary, path: &std::path::Path, out: &mut Output) -> Outcome {
    let readable = |ok: bool| if ok { "readable" } else { "DAMAGED" };
    let lines = [
        format!(
            "file          {} ({}, format {})",
            path.display(),
            human_bytes(p.file_size),
            p.format_version
        ),
        format!(
            "entries       {} ({} distinct keys) in {} data blocks",
            p.entries, p.distinct_keys, p.data_blocks
        ),
        format!(
            "keys          {} .. {}",
            out.render(&p.smallest_user_key),
            out.render(&p.largest_user_key)
        ),
        format!("sequence      {} .. {}", p.min_seq, p.max_seq),
        format!(
            "data          {:?} compression, {} raw, {} stored",
            p.compression,
            human_bytes(p.raw_data_bytes),
            human_bytes(p.stored_data_bytes)
        ),
        format!(
            "key filter    {}, {}, {:.2} bits/key (built for {:.2}), {} partitions, {}",
            p.filter_kind,
            human_bytes(p.filter_bytes),
            p.filter_bits_per_key,
            p.filter_target_bits_per_key,
            p.filter_partitions,
            readable(p.filter_readable)
        ),
    ];
    for line in lines {
        out.line(line)?;
    }
    for leaf in &p.value_filters {
        out.line(format!(
            "value filter  index {}: ~{} values, {} at offset {}, {}",
            leaf.index_id,
            leaf.distinct_values,
            human_bytes(leaf.size),
            leaf.offset,
            readable(leaf.readable)
        ))?;
    }
    Ok(())
}

/// The summary as JSON.
fn properties_json(p: &TableSummary, out: &Output) -> Value {
    let leaves: Vec<Value> = p
        .value_filters
        .iter()
        .map(|leaf| {
            json!({
                "index_id": leaf.index_id,
                "distinct_values": leaf.distinct_values,
                "readable": leaf.readable,
                "offset": leaf.offset,
                "size": leaf.size,
            })
        })
        .collect();
    json!({
        "entries": p.entries,
        "distinct_keys": p.distinct_keys,
        "data_blocks": p.data_blocks,
        "file_size": p.file_size,
        "smallest_key": out.render(&p.smallest_user_key),
        "largest_key": out.render(&p.largest_user_key),
        "min_seq": p.min_seq,
        "max_seq": p.max_seq,
        "filter_kind": p.filter_kind,
        "filter_partitions": p.filter_partitions,
        "filter_bytes": p.filter_bytes,
        "filter_bits_per_key": p.filter_bits_per_key,
        "filter_target_bits_per_key": p.filter_target_bits_per_key,
        "filter_readable": p.filter_readable,
        "compression": format!("{:?}", p.compression),
        "raw_data_bytes": p.raw_data_bytes,
        "stored_data_bytes": p.stored_data_bytes,
        "format_version": p.format_version,
        "value_filters": leaves,
    })
}
