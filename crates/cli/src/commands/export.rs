//! `sift export`: every entry (or a prefix's) as JSON lines or CSV, in the
//! shape `sift import --key key --value value` reads back.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use serde_json::json;

use super::open_existing;
use crate::cli::{ExportArgs, ExportFormat};
use crate::error::{Context, Outcome};
use crate::output::Output;

/// Writes the entries `args` selects.
pub fn run(db: &Path, args: &ExportArgs, out: &mut Output) -> Outcome {
    let prefix = out.parse_optional("--prefix", args.prefix.as_deref())?;
    let db = open_existing(db)?;
    let sink: Box<dyn Write> = match &args.output {
        Some(path) => {
            Box::new(File::create(path).context(format_args!("creating {}", path.display()))?)
        }
        None => Box::new(io::stdout().lock()),
    };
    let entries = match &prefix {
        Some(prefix) => db.prefix(prefix),
        None => db.range::<&[u8], _>(..),
    };
    match args.format {
        ExportFormat::Jsonl => {
            let mut sink = BufWriter::new(sink);
            for entry in entries {
                let (key, value) = entry?;
                let line = json!({ "key": out.render(&key), "value": out.render(&value) });
                writeln!(sink, "{line}")?;
            }
            Ok(sink.flush()?)
        }
        ExportFormat::Csv => {
            let mut sink = csv::Writer::from_writer(sink);
            sink.write_record(["key", "value"])
                .map_err(io::Error::from)?;
            for entry in entries {
                let (key, value) = entry?;
                sink.write_record([out.render(&key), out.render(&value)])
                    .map_err(io::Error::from)?;
            }
            Ok(sink.flush()?)
        }
    }
}
