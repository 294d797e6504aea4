//! `sift export`: every entry (or a prefix's) as JSON lines or CSV, in the
//! shape `sift import --key key --value value` reads back byte for byte.
//!
//! Keys and values are written as their text, or as hex with `--hex`. Bytes
//! that are not UTF-8 have no text, and escaping them (as `scan` prints
//! them) would not survive a reload: `\xff` is also four characters of
//! text. So without `--hex` such an entry stops the export with a usage
//! error that says to pass `--hex`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::json;

use super::open_for_reading;
use crate::cli::{ExportArgs, ExportFormat};
use crate::error::{Context, Failure, Outcome};
use crate::output::{Output, display_bytes};

/// Writes the entries `args` selects.
pub fn run(db_path: &Path, args: &ExportArgs, out: &mut Output) -> Outcome {
    let prefix = out.parse_optional("--prefix", args.prefix.as_deref())?;
    let db = open_for_reading(db_path)?;
    let mut sink = Sink::open(args.output.as_deref(), db_path)?;
    let entries = match &prefix {
        Some(prefix) => db.prefix(prefix),
        None => db.range::<&[u8], _>(..),
    };
    let written = match args.format {
        ExportFormat::Jsonl => write_jsonl(entries, out, sink.writer()),
        ExportFormat::Csv => write_csv(entries, out, sink.writer()),
    };
    sink.finish(written)
}

/// The entries an export reads.
type Entries = siftdb::DbIter;

/// One `{"key": ..., "value": ...}` object per line.
fn write_jsonl(entries: Entries, out: &Output, sink: &mut dyn Write) -> Outcome {
    let mut sink = BufWriter::new(sink);
    for entry in entries {
        let (key, value) = entry?;
        let (key, value) = exported(out, &key, &value)?;
        writeln!(sink, "{}", json!({ "key": key, "value": value }))?;
    }
    Ok(sink.flush()?)
}

/// A `key,value` header, then one row per entry.
fn write_csv(entries: Entries, out: &Output, sink: &mut dyn Write) -> Outcome {
    let mut sink = csv::Writer::from_writer(sink);
    sink.write_record(["key", "value"])
        .map_err(io::Error::from)?;
    for entry in entries {
        let (key, value) = entry?;
        sink.write_record(<[String; 2]>::from(exported(out, &key, &value)?))
            .map_err(io::Error::from)?;
    }
    Ok(sink.flush()?)
}

/// An entry's key and value as the export writes them: hex with `--hex`,
/// else their text, refused if either is not UTF-8 (see the module's notes).
fn exported(out: &Output, key: &[u8], value: &[u8]) -> Outcome<(String, String)> {
    if out.hex {
        return Ok((hex::encode(key), hex::encode(value)));
    }
    let refuse = |what: String| {
        Failure::usage(format!(
            "{what} is not UTF-8 text, which a plain export cannot write so that \
             import reads back the same bytes: export with --hex (and import the \
             file with --hex)"
        ))
    };
    let key_text = std::str::from_utf8(key).map_err(|_| refuse(format!("key {}", shown(key))))?;
    let value_text = std::str::from_utf8(value)
        .map_err(|_| refuse(format!("the value of key {}", shown(key))))?;
    Ok((key_text.to_owned(), value_text.to_owned()))
}

/// A key for an error message: escaped, and cut short if long (keys may
/// hold 64 KiB).
fn shown(key: &[u8]) -> String {
    const SHOWN: usize = 64;
    let text = display_bytes(&key[..key.len().min(SHOWN)]);
    let more = if key.len() > SHOWN { "..." } else { "" };
    format!("\"{text}{more}\"")
}

/// Where the export goes.
enum Sink {
    /// Standard output.
    Stdout(io::StdoutLock<'static>),
    /// A file that is not a regular file (a FIFO, `/dev/stdout`): written
    /// in place, as there is nothing to keep.
    InPlace(File),
    /// A regular file, new or replaced: written under a temporary name next
    /// to it and renamed over it once complete, so that an export that fails
    /// half-way (a refused key, a damaged table) leaves an older dump as it was.
    Replace {
        file: File,
        temp: PathBuf,
        path: PathBuf,
    },
}

impl Sink {
    /// Standard output, or `output` once it is known not to be inside the
    /// database at `db`.
    fn open(output: Option<&Path>, db: &Path) -> Outcome<Self> {
        let Some(output) = output else {
            return Ok(Self::Stdout(io::stdout().lock()));
        };
        let path = outside_database(output, db)?;
        let creating = || format!("creating {}", output.display());
        match fs::metadata(&path) {
            Ok(meta) if !meta.is_file() => {
                Ok(Self::InPlace(File::create(&path).context(creating())?))
            }
            existing => {
                let temp = temporary_name(&path);
                let file = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&temp)
                    .context(creating())?;
                // The replacement keeps the permissions of what it replaces.
                if let Ok(meta) = existing {
                    let _ = file.set_permissions(meta.permissions());
                }
                Ok(Self::Replace { file, temp, path })
            }
        }
    }

    /// What the entries are written to.
    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Self::Stdout(stdout) => stdout,
            Self::InPlace(file) | Self::Replace { file, .. } => file,
        }
    }

    /// Puts the file in place if everything was `written`, else removes it.
    fn finish(self, written: Outcome) -> Outcome {
        let Self::Replace { file, temp, path } = self else {
            return written;
        };
        let placed = written.and_then(|()| {
            file.sync_all()?;
            fs::rename(&temp, &path).context(format_args!("renaming to {}", path.display()))
        });
        if placed.is_err() {
            let _ = fs::remove_file(&temp);
        }
        placed
    }
}

/// `output` resolved (symbolic links and `..` followed), refused if it lies
/// inside the database at `db`: writing there could truncate a live table.
fn outside_database(output: &Path, db: &Path) -> Outcome<PathBuf> {
    let path = resolve(output)?;
    let db = db
        .canonicalize()
        .context(format_args!("resolving {}", db.display()))?;
    if path.starts_with(&db) {
        return Err(Failure::usage(format!(
            "-o {}: the output is inside the database {} (its files would be \
             overwritten); write it elsewhere",
            output.display(),
            db.display()
        )));
    }
    Ok(path)
}

/// `path` canonicalized, though its file may not exist yet: then its folder
/// canonicalized, and its name appended.
fn resolve(path: &Path) -> Outcome<PathBuf> {
    if let Ok(resolved) = path.canonicalize() {
        return Ok(resolved);
    }
    let name = path
        .file_name()
        .ok_or_else(|| Failure::usage(format!("-o {}: not a file name", path.display())))?;
    let folder = match path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => Path::new("."),
    };
    let folder = folder
        .canonicalize()
        .context(format_args!("creating {}", path.display()))?;
    Ok(folder.join(name))
}

/// A name next to `path` for the file being written: hidden, and with the
/// process id so that two exports to the same file do not share it.
fn temporary_name(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(".{name}.sift-export-{}", std::process::id()))
}
