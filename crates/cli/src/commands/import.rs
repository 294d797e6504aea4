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
    let mut fields = IndexedFields::new(args);
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
        batch_keys: Vec::new(),
        batch_records: args.batch,
        records: 0,
        new_keys: 0,
    };
    let shape = Shape { args, out };
    let read = match args.format {
        ImportFormat::Csv => read_csv(input, &shape, &mut loader, &mut fields, &bar),
        ImportFormat::Jsonl => read_jsonl(input, &shape, &mut loader, &mut fields, &bar),
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
    fields.warn_of_missing();
    let seconds = started.elapsed().as_secs_f64();
    // Records that repeat a key replace its value: the count of records
    // alone would overstate what the database now holds.
    let new_keys = loader.new_keys;
    let overwritten = records - new_keys;
    if out.json {
        out.json_line(&json!({
            "imported": records,
            "new_keys": new_keys,
            "overwritten": overwritten,
            "seconds": seconds,
        }))
    } else {
        out.line(format!(
            "imported {records} records from {} in {seconds:.2} s: {new_keys} new keys, \
             {overwritten} overwrote a key stored before or earlier in the file",
            args.file.display()
        ))
    }
}

/// The fields that `--index NAME=COL` names, and whether any record had
/// each: an index on a column no record has stays empty, most likely a
/// misspelt column, which deserves a warning.
struct IndexedFields<'a> {
    /// The `--index` argument, the field's JSON Pointer, and whether a record had it.
    fields: Vec<(&'a str, String, bool)>,
}

impl<'a> IndexedFields<'a> {
    /// The fields of `args`'s `--index` definitions. With `--value`, the
    /// only index allowed is on the value column, which every record must
    /// have, so there is nothing to watch.
    fn new(args: &'a ImportArgs) -> Self {
        let fields = if args.value.is_some() {
            Vec::new()
        } else {
            args.indexes
                .iter()
                .filter_map(|spec| {
                    let (_, column) = spec.split_once('=')?;
                    Some((spec.as_str(), pointer(column), false))
                })
                .collect()
        };
        Self { fields }
    }

    /// Notes which fields `record` has.
    fn observe(&mut self, record: &Value) {
        for (_, pointer, seen) in self.fields.iter_mut().filter(|field| !field.2) {
            *seen = record.pointer(pointer).is_some();
        }
    }

    /// Warns, on standard error, of each field no record had.
    fn warn_of_missing(&self) {
        for (spec, pointer, _) in self.fields.iter().filter(|field| !field.2) {
            eprintln!(
                "warning: --index {spec}: no record imported has the field {pointer}, \
                 so the index holds nothing from this file"
            );
        }
    }
}

/// Accumulates records into write batches.
struct Loader<'a> {
    db: &'a Db,
    batch: WriteBatch,
    /// The keys of `batch`, to count those not stored yet when it is written.
    batch_keys: Vec<Vec<u8>>,
    batch_records: u64,
    /// Records written so far.
    records: u64,
    /// Keys that had no value before a record of this import wrote them.
    new_keys: u64,
}

impl Loader<'_> {
    /// Adds one record, writing the batch when it is full.
    fn add(&mut self, key: &[u8], value: &[u8]) -> Outcome {
        self.batch.insert(key, value);
        self.batch_keys.push(key.to_vec());
        if self.batch.len() as u64 >= self.batch_records {
            self.write_batch()?;
        }
        Ok(())
    }

    /// Writes the records added since the last write.
    fn write_batch(&mut self) -> Outcome {
        if !self.batch.is_empty() {
            let new_keys = self.count_new_keys()?;
            self.db.write(&self.batch)?;
            self.records += self.batch.len() as u64;
            self.new_keys += new_keys;
            self.batch.clear();
            self.batch_keys.clear();
        }
        Ok(())
    }

    /// How many distinct keys of the batch have no value stored yet: every
    /// other record of the batch overwrites one (stored before, or earlier
    /// in the batch). Earlier batches are written, so a lookup sees them.
    fn count_new_keys(&self) -> Outcome<u64> {
        let mut distinct: Vec<&[u8]> = self.batch_keys.iter().map(Vec::as_slice).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let stored = self.db.multi_get(&distinct)?;
        Ok(stored.iter().filter(|value| value.is_none()).count() as u64)
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
    fields: &mut IndexedFields<'_>,
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
        fields.observe(&Value::Object(object));
        bar.set_position(row.position().map_or(0, csv::Position::byte));
    }
    Ok(())
}

/// JSON lines: each line is an object, stored as it was given.
fn read_jsonl(
    input: Box<dyn Read>,
    shape: &Shape<'_>,
    loader: &mut Loader<'_>,
    fields: &mut IndexedFields<'_>,
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
        fields.observe(&object);
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
