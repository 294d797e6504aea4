//! `sift import`: records from CSV or JSON lines, keyed by some of their
//! columns, stored as JSON objects so that value indexes can name a field.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::time::Instant;

use serde_json::{Map, Value, json};
use siftdb::{Db, Extractor, IndexDef, PersistMode, WriteBatch};

use super::open_or_create;
use crate::cli::{ImportArgs, ImportFormat};
use crate::error::{Context, Failure, Outcome};
use crate::output::Output;
use crate::progress::{self, Unit};

/// Loads the records of `args.file` into the database.
pub fn run(db: &Path, args: &ImportArgs, out: &mut Output) -> Outcome {
    let indexes = parse_indexes(args)?;
    let (input, size) = open_input(&args.file)?;
    let db = open_or_create(db)?;
    for def in indexes {
        declare(&db, def)?;
    }
    let bar = match size {
        Some(size) => progress::bar("importing", size, Unit::Bytes),
        None => progress::spinner("importing"),
    };
    let started = Instant::now();
    let mut loader = Loader {
        db: &db,
        batch: WriteBatch::new(),
        batch_records: args.batch,
        records: 0,
    };
    let shape = Shape { args, out };
    let read = match args.format {
        ImportFormat::Csv => read_csv(input, &shape, &mut loader, &bar),
        ImportFormat::Jsonl => read_jsonl(input, &shape, &mut loader, &bar),
    };
    // What was read before a bad record is stored either way, so the count
    // in the error is exact.
    let stored = loader.write_batch();
    let records = loader.records;
    read.and(stored).map_err(|failure| {
        Failure::new(
            failure.kind,
            format!(
                "{}: {failure} ({records} records before it were imported)",
                args.file.display()
            ),
        )
    })?;
    db.flush()?;
    db.persist(PersistMode::SyncAll)?;
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    if out.json {
        out.json_line(&json!({ "imported": records, "seconds": seconds }))
    } else {
        out.line(format!(
            "imported {records} records from {} in {seconds:.2} s",
            args.file.display()
        ))
    }
}

/// Accumulates records into write batches.
struct Loader<'a> {
    db: &'a Db,
    batch: WriteBatch,
    batch_records: u64,
    /// Records written so far.
    records: u64,
}

impl Loader<'_> {
    /// Adds one record, writing the batch when it is full.
    fn add(&mut self, key: &[u8], value: &[u8]) -> Outcome {
        self.batch.insert(key, value);
        if self.batch.len() as u64 >= self.batch_records {
            self.write_batch()?;
        }
        Ok(())
    }

    /// Writes the records added since the last write.
    fn write_batch(&mut self) -> Outcome {
        if !self.batch.is_empty() {
            self.db.write(&self.batch)?;
            self.records += self.batch.len() as u64;
            self.batch.clear();
        }
        Ok(())
    }
}

/// How a record becomes a key and a value.
struct Shape<'a> {
    args: &'a ImportArgs,
    out: &'a Output,
}

impl Shape<'_> {
    /// The key and value of a record whose columns `field` looks up.
    fn entry(
        &self,
        record: &dyn Fn() -> Vec<u8>,
        field: &dyn Fn(&str) -> Option<String>,
    ) -> Outcome<(Vec<u8>, Vec<u8>)> {
        let mut parts = Vec::with_capacity(self.args.key.len());
        for column in &self.args.key {
            let part = field(column).ok_or_else(|| {
                Failure::usage(format!("the record has no key column {column:?}"))
            })?;
            parts.push(part);
        }
        let key = self
            .out
            .parse("key", &parts.join(&self.args.key_separator))?;
        let value = match &self.args.value {
            None => record(),
            Some(column) => {
                let text = field(column).ok_or_else(|| {
                    Failure::usage(format!("the record has no value column {column:?}"))
                })?;
                self.out.parse("value", &text)?
            }
        };
        Ok((key, value))
    }
}

/// CSV with a header row: each row is stored as a JSON object of strings.
fn read_csv(
    input: Box<dyn Read>,
    shape: &Shape<'_>,
    loader: &mut Loader<'_>,
    bar: &indicatif::ProgressBar,
) -> Outcome {
    let mut reader = csv::Reader::from_reader(input);
    let headers = reader.headers().map_err(csv_error)?.clone();
    for row in reader.records() {
        let row = row.map_err(csv_error)?;
        let line = row.position().map_or(0, csv::Position::line);
        let object: Map<String, Value> = headers
            .iter()
            .zip(row.iter())
            .map(|(name, field)| (name.to_owned(), Value::String(field.to_owned())))
            .collect();
        let field = |name: &str| {
            headers
                .iter()
                .position(|h| h == name)
                .and_then(|at| row.get(at))
        };
        let (key, value) = shape
            .entry(
                &|| Value::Object(object.clone()).to_string().into_bytes(),
                &|name| field(name).map(str::to_owned),
            )
            .context(format_args!("line {line}"))?;
        loader.add(&key, &value)?;
        bar.set_position(row.position().map_or(0, csv::Position::byte));
    }
    Ok(())
}

/// JSON lines: each line is an object, stored as it was given.
fn read_jsonl(
    input: Box<dyn Read>,
    shape: &Shape<'_>,
    loader: &mut Loader<'_>,
    bar: &indicatif::ProgressBar,
) -> Outcome {
    let reader = BufReader::new(input);
    for (number, line) in reader.lines().enumerate() {
        let line = line?;
        bar.inc(line.len() as u64 + 1);
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        let at = || format!("line {}", number + 1);
        let object: Value = serde_json::from_str(text)
            .map_err(|e| Failure::usage(format!("not JSON: {e}")))
            .context(at())?;
        if !object.is_object() {
            return Err(Failure::usage("not a JSON object")).context(at());
        }
        let field = |name: &str| object.pointer(&pointer(name)).and_then(scalar_text);
        let (key, value) = shape
            .entry(&|| text.as_bytes().to_vec(), &field)
            .context(at())?;
        loader.add(&key, &value)?;
    }
    Ok(())
}

/// A JSON scalar as key text: a string's contents, a number's or boolean's JSON text.
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(_) | Value::Bool(_) => Some(value.to_string()),
        _ => None,
    }
}

/// A column name as a JSON Pointer: as given if it starts with `/`, else
/// the top-level field of that name (`~` and `/` escaped as RFC 6901 says).
pub fn pointer(column: &str) -> String {
    Extractor::pointer_of(column)
}

/// The `--index NAME=COL` definitions.
fn parse_indexes(args: &ImportArgs) -> Outcome<Vec<IndexDef>> {
    args.indexes
        .iter()
        .map(|spec| {
            let (name, column) = spec.split_once('=').ok_or_else(|| {
                Failure::usage(format!("--index {spec:?}: expected NAME=COLUMN"))
            })?;
            let extractor = match &args.value {
                None => Extractor::json_field(pointer(column)),
                Some(value) if value == column => Extractor::WholeValue,
                Some(value) => {
                    return Err(Failure::usage(format!(
                        "--index {spec:?}: only column {value:?} is stored (--value), so only it can be indexed"
                    )));
                }
            };
            Ok(IndexDef::new(name, extractor))
        })
        .collect()
}

/// Declares `def` unless the same index already exists.
fn declare(db: &Db, def: IndexDef) -> Outcome {
    let wanted = def.extractor().description();
    match db.indexes().iter().find(|index| index.name == def.name()) {
        Some(index) if index.extractor == wanted => Ok(()),
        Some(index) => Err(Failure::usage(format!(
            "index {:?} exists and extracts {}, not {wanted}",
            index.name, index.extractor
        ))),
        None => Ok(db.add_index(def)?),
    }
}

/// The input and its size (unknown for standard input).
fn open_input(path: &Path) -> Outcome<(Box<dyn Read>, Option<u64>)> {
    if path == Path::new("-") {
        return Ok((Box::new(io::stdin().lock()), None));
    }
    let file = File::open(path).context(format_args!("opening {}", path.display()))?;
    let size = file.metadata().map(|m| m.len()).ok();
    Ok((Box::new(file), size))
}

/// A CSV syntax or I/O error.
fn csv_error(error: csv::Error) -> Failure {
    if error.is_io_error() {
        Failure::storage(error.to_string())
    } else {
        Failure::usage(error.to_string())
    }
}
