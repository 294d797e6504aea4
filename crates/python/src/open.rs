//! `Db(path, **options)`: the keyword options as an engine `DbBuilder`,
//! and the open modes (`read_only`, `create_if_missing`).

use std::path::Path;

use siftdb::{Compression, DbBuilder};

use pyo3::prelude::*;

use crate::errors::invalid;

/// The keyword options of `Db(...)`, as Python gave them. Sizes are taken
/// as wide integers so that a negative or huge one is an
/// `InvalidArgumentError` naming the option (an unsigned parameter would
/// make it an `OverflowError` that names nothing).
pub struct Options<'a> {
    pub memtable_bytes: Option<i128>,
    pub block_cache_bytes: Option<i128>,
    pub filter_memory_bytes: Option<i128>,
    pub table_target_bytes: Option<i128>,
    pub block_bytes: Option<i128>,
    pub max_open_files: Option<i128>,
    pub direct_reads: Option<bool>,
    pub sync_writes: Option<bool>,
    pub compression: Option<&'a str>,
    pub background_threads: Option<bool>,
    pub compaction_threads: Option<i128>,
    pub read_only: bool,
    /// `None`: create unless `read_only`.
    pub create_if_missing: Option<bool>,
}

impl Options<'_> {
    /// The engine's builder for a database at `path`, once the options and
    /// the mode check out.
    pub fn builder(&self, path: &Path) -> PyResult<DbBuilder> {
        let mut builder = siftdb::Db::builder(path).read_only(self.read_only);
        if let Some(bytes) = size("memtable_bytes", self.memtable_bytes)? {
            builder = builder.memtable_bytes(bytes);
        }
        if let Some(bytes) = size("block_cache_bytes", self.block_cache_bytes)? {
            builder = builder.block_cache_bytes(bytes);
        }
        if let Some(bytes) = size("filter_memory_bytes", self.filter_memory_bytes)? {
            builder = builder.filter_memory_bytes(bytes);
        }
        if let Some(bytes) = size("table_target_bytes", self.table_target_bytes)? {
            builder = builder.table_target_bytes(bytes);
        }
        if let Some(bytes) = size("block_bytes", self.block_bytes)? {
            builder = builder.block_bytes(bytes);
        }
        if let Some(files) = size("max_open_files", self.max_open_files)? {
            builder = builder.max_open_files(files);
        }
        if let Some(direct) = self.direct_reads {
            builder = builder.direct_reads(direct);
        }
        if let Some(sync) = self.sync_writes {
            builder = builder.sync_writes(sync);
        }
        if let Some(name) = self.compression {
            builder = builder.compression(compression(name)?);
        }
        if let Some(enabled) = self.background_threads {
            builder = builder.background_threads(enabled);
        }
        if let Some(threads) = size("compaction_threads", self.compaction_threads)? {
            builder = builder.compaction_threads(threads);
        }
        self.check_mode(path)?;
        Ok(builder)
    }

    /// Refuses a mode that cannot hold: a read-only open that should
    /// create, or an open that must not create on a directory without a
    /// database. (A read-only open of one is refused by the engine, which
    /// looks without changing anything.)
    fn check_mode(&self, path: &Path) -> PyResult<()> {
        match (self.read_only, self.create_if_missing) {
            (true, Some(true)) => Err(invalid(
                "a read-only open cannot create a database: drop create_if_missing=True",
            )),
            (false, Some(false)) if !holds_database(path) => Err(invalid(format!(
                "{} holds no database (no CURRENT file), and create_if_missing=False",
                path.display()
            ))),
            _ => Ok(()),
        }
    }
}

/// Whether `path` holds a database: one is created with a `CURRENT` file
/// (naming its manifest), written before any write is acknowledged, so a
/// directory without one holds no data.
fn holds_database(path: &Path) -> bool {
    path.join("CURRENT").is_file()
}

/// Option `name`'s `value` as the engine's integer type.
fn size<T: TryFrom<i128>>(name: &str, value: Option<i128>) -> PyResult<Option<T>> {
    value
        .map(|v| {
            T::try_from(v).map_err(|_| {
                let why = if v < 0 {
                    "must not be negative"
                } else {
                    "is too large"
                };
                invalid(format!("{name}={v}: {why}"))
            })
        })
        .transpose()
}

/// The compression named `name`.
fn compression(name: &str) -> PyResult<Compression> {
    match name {
        "none" => Ok(Compression::None),
        "lz4" => Ok(Compression::Lz4),
        other => Err(invalid(format!(
            "compression {other:?}: expected \"none\" or \"lz4\""
        ))),
    }
}
