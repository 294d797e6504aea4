//! `siftdb.Db`: a database opened from Python, with the mapping protocol
//! (`db[key]`, `key in db`, `del db[key]`) over the engine's API.

use std::path::PathBuf;
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use siftdb::{Compression, Extractor, InMemory, IndexDef, WriteOptions};

use crate::batch::WriteBatch;
use crate::bytes::{Data, bytes_or, to_bytes};
use crate::errors::{ClosedError, invalid, to_py};
use crate::iter::{Entries, Yields};
use crate::read::{Reader, Span, find};
use crate::snapshot::Snapshot;
use crate::stats::{db_stats, index_info, verify_report};
use crate::txn::Transaction;

/// A Sift database: an embedded key-value store whose keys and values are
/// `bytes` (`str` is accepted and stored as UTF-8).
///
/// `Db(path, **options)` opens the database in directory `path`, creating
/// it if needed. Use it as a context manager, or call `close()`: the
/// directory is released once the handle and every snapshot, iterator and
/// transaction made from it are gone.
///
/// `len(db)` is not offered: the count of live keys is not kept, and
/// counting them reads the whole store (`sum(1 for _ in db.keys())` does
/// that, and says so).
#[pyclass(module = "siftdb", frozen)]
pub struct Db {
    handle: ArcSwapOption<siftdb::Db>,
    path: PathBuf,
}

impl Db {
    /// The open engine handle, or `ClosedError`. A call holds it until it
    /// returns (a `close()` meanwhile ends the database after it).
    pub fn handle(&self) -> PyResult<Open> {
        let guard = self.handle.load();
        if guard.is_none() {
            return Err(ClosedError::new_err("the database is closed"));
        }
        Ok(Open(guard))
    }
}

/// An open handle, borrowed for one call without touching the `Arc`'s
/// count (which every thread's calls would contend on).
pub struct Open(arc_swap::Guard<Option<Arc<siftdb::Db>>>);

impl std::ops::Deref for Open {
    type Target = siftdb::Db;

    fn deref(&self) -> &siftdb::Db {
        self.0
            .as_deref()
            .unwrap_or_else(|| unreachable!("`Db::handle` makes an `Open` only of a database"))
    }
}

/// `sync`: `None` for the database's default.
pub fn write_options(sync: Option<bool>) -> WriteOptions {
    WriteOptions { sync }
}

#[pymethods]
impl Db {
    /// Opens (or creates) the database in directory `path`.
    ///
    /// Options (all optional): `memtable_bytes`, `block_cache_bytes`,
    /// `filter_memory_bytes` (the budget of resident filters and indexes),
    /// `table_target_bytes`, `block_bytes`, `max_open_files`,
    /// `sync_writes` (every write fsynced before it returns; default
    /// False), `compression` (`"none"` or `"lz4"`), `background_threads`
    /// (flush and compact on background threads; default True) and
    /// `compaction_threads`.
    #[new]
    #[pyo3(signature = (
        path, *, memtable_bytes=None, block_cache_bytes=None, filter_memory_bytes=None,
        table_target_bytes=None, block_bytes=None, max_open_files=None, sync_writes=None,
        compression=None, background_threads=None, compaction_threads=None,
    ))]
    #[expect(
        clippy::too_many_arguments,
        reason = "Python's keyword options, one each"
    )]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        memtable_bytes: Option<usize>,
        block_cache_bytes: Option<u64>,
        filter_memory_bytes: Option<u64>,
        table_target_bytes: Option<u64>,
        block_bytes: Option<usize>,
        max_open_files: Option<usize>,
        sync_writes: Option<bool>,
        compression: Option<&str>,
        background_threads: Option<bool>,
        compaction_threads: Option<usize>,
    ) -> PyResult<Self> {
        let mut builder = siftdb::Db::builder(&path);
        if let Some(bytes) = memtable_bytes {
            builder = builder.memtable_bytes(bytes);
        }
        if let Some(bytes) = block_cache_bytes {
            builder = builder.block_cache_bytes(bytes);
        }
        if let Some(bytes) = filter_memory_bytes {
            builder = builder.filter_memory_bytes(bytes);
        }
        if let Some(bytes) = table_target_bytes {
            builder = builder.table_target_bytes(bytes);
        }
        if let Some(bytes) = block_bytes {
            builder = builder.block_bytes(bytes);
        }
        if let Some(files) = max_open_files {
            builder = builder.max_open_files(files);
        }
        if let Some(sync) = sync_writes {
            builder = builder.sync_writes(sync);
        }
        if let Some(name) = compression {
            builder = builder.compression(match name {
                "none" => Compression::None,
                "lz4" => Compression::Lz4,
                other => {
                    return Err(invalid(format!(
                        "compression {other:?}: expected \"none\" or \"lz4\""
                    )));
                }
            });
        }
        if let Some(enabled) = background_threads {
            builder = builder.background_threads(enabled);
        }
        if let Some(threads) = compaction_threads {
            builder = builder.compaction_threads(threads);
        }
        let db = py.detach(|| builder.open()).map_err(to_py)?;
        Ok(Self {
            handle: ArcSwapOption::from_pointee(db),
            path,
        })
    }

    /// The database's directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.handle.load().is_none()
    }

    /// Closes the database: background work ends and the WAL is synced.
    /// Later calls raise `ClosedError`; closing twice does nothing.
    fn close(&self, py: Python<'_>) {
        if let Some(db) = self.handle.swap(None) {
            // Dropping the last handle joins the background threads.
            py.detach(move || drop(db));
        }
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { "closed" } else { "open" };
        format!("<siftdb.Db {:?} {state}>", self.path)
    }

    /// The value of `key`, or `default` if there is none.
    #[pyo3(signature = (key, default=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: Data<'_>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let db = self.handle()?;
        get_or(py, &*db, &key, default)
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let db = self.handle()?;
        get_item(py, &*db, key)
    }

    fn __contains__(&self, py: Python<'_>, key: Data<'_>) -> PyResult<bool> {
        let db = self.handle()?;
        contains(py, &*db, &key)
    }

    /// Stores `value` under `key`; `sync=True` fsyncs the WAL first.
    #[pyo3(signature = (key, value, *, sync=None))]
    fn put(
        &self,
        py: Python<'_>,
        key: Data<'_>,
        value: Data<'_>,
        sync: Option<bool>,
    ) -> PyResult<()> {
        let db = self.handle()?;
        py.detach(|| db.insert_with(&key, &value, write_options(sync)))
            .map_err(to_py)
    }

    fn __setitem__(&self, py: Python<'_>, key: Data<'_>, value: Data<'_>) -> PyResult<()> {
        self.put(py, key, value, None)
    }

    /// Deletes `key`. Deleting an absent key is not an error: knowing
    /// whether it was there would cost a read.
    #[pyo3(signature = (key, *, sync=None))]
    fn delete(&self, py: Python<'_>, key: Data<'_>, sync: Option<bool>) -> PyResult<()> {
        let db = self.handle()?;
        py.detach(|| db.remove_with(&key, write_options(sync)))
            .map_err(to_py)
    }

    /// `del db[key]`: as `delete` (no `KeyError` for an absent key).
    fn __delitem__(&self, py: Python<'_>, key: Data<'_>) -> PyResult<()> {
        self.delete(py, key, None)
    }

    /// The values of `keys` (`None` where there is none), in their order,
    /// read together.
    fn multi_get<'py>(
        &self,
        py: Python<'py>,
        keys: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let db = self.handle()?;
        let objects: Vec<Bound<'py, PyAny>> = keys.try_iter()?.collect::<PyResult<_>>()?;
        let keys: Vec<Data<'_>> = objects
            .iter()
            .map(|o| o.extract())
            .collect::<PyResult<_>>()?;
        let values = py.detach(|| db.multi_get(&keys)).map_err(to_py)?;
        PyList::new(
            py,
            values
                .iter()
                .map(|value| value.as_deref().map(|v| to_bytes(py, v))),
        )
    }

    /// `(key, value)` pairs in key order, lazily: from `start` (included)
    /// to `stop` (excluded), among the keys that begin with `prefix`, or in
    /// reverse. The iterator reads as of the moment it was made.
    #[pyo3(signature = (start=None, stop=None, *, prefix=None, reverse=false))]
    fn items(
        &self,
        start: Option<Data<'_>>,
        stop: Option<Data<'_>>,
        prefix: Option<Data<'_>>,
        reverse: bool,
    ) -> PyResult<Entries> {
        self.scan(start, stop, prefix, reverse, Yields::Items)
    }

    /// The keys of `items(...)`.
    #[pyo3(signature = (start=None, stop=None, *, prefix=None, reverse=false))]
    fn keys(
        &self,
        start: Option<Data<'_>>,
        stop: Option<Data<'_>>,
        prefix: Option<Data<'_>>,
        reverse: bool,
    ) -> PyResult<Entries> {
        self.scan(start, stop, prefix, reverse, Yields::Keys)
    }

    /// The values of `items(...)`.
    #[pyo3(signature = (start=None, stop=None, *, prefix=None, reverse=false))]
    fn values(
        &self,
        start: Option<Data<'_>>,
        stop: Option<Data<'_>>,
        prefix: Option<Data<'_>>,
        reverse: bool,
    ) -> PyResult<Entries> {
        self.scan(start, stop, prefix, reverse, Yields::Values)
    }

    /// Every key, in order (as `keys()`).
    fn __iter__(&self) -> PyResult<Entries> {
        self.scan(None, None, None, false, Yields::Keys)
    }

    /// A consistent view as of now: `get`, `[]`, `in`, `items()` and
    /// `find()` see no later write.
    fn snapshot(&self) -> PyResult<Snapshot> {
        Ok(Snapshot::new(self.handle()?.snapshot()))
    }

    /// A batch of writes applied atomically: on leaving its `with` block
    /// without an exception, or by `commit()`.
    #[pyo3(signature = (*, sync=None))]
    fn write_batch(slf: Bound<'_, Self>, sync: Option<bool>) -> PyResult<WriteBatch> {
        slf.get().handle()?;
        Ok(WriteBatch::new(slf.unbind(), sync))
    }

    /// An optimistic serializable transaction: reads see its snapshot and
    /// its own writes; `commit()` raises `ConflictError` if another commit
    /// wrote what it read or wrote since. `siftdb.run_transaction` retries.
    fn transaction(&self) -> PyResult<Transaction> {
        Ok(Transaction::new(self.handle()?.transaction()))
    }

    /// The records whose value holds `value` by value index `index`, in key
    /// order, lazily, `limit` at most: an iterator of `(key, value)` whose
    /// `explain()` says what the search read. `method`: `"auto"` (the
    /// planner), `"scan"`, `"bloom-scan"`, `"hierarchy"` or `"flat"`.
    #[pyo3(signature = (index, value, *, limit=None, method=None))]
    fn find(
        &self,
        py: Python<'_>,
        index: &str,
        value: Data<'_>,
        limit: Option<usize>,
        method: Option<&str>,
    ) -> PyResult<Entries> {
        let db = self.handle()?;
        find(py, &*db, index, &value, limit, method)
    }

    /// Adds value index `name`: over JSON field `field` (a name, or a JSON
    /// Pointer such as `/user/name`), over column `column` of delimited
    /// records, or over the whole value when neither is given. Existing
    /// tables are indexed in the background; `wait=True` (the default)
    /// returns once they all are.
    #[pyo3(signature = (name, *, field=None, column=None, separator=",", wait=true))]
    fn add_index(
        &self,
        py: Python<'_>,
        name: &str,
        field: Option<&str>,
        column: Option<usize>,
        separator: &str,
        wait: bool,
    ) -> PyResult<()> {
        let extractor = match (field, column) {
            (Some(_), Some(_)) => return Err(invalid("give field or column, not both")),
            (Some(field), None) => Extractor::json_field(Extractor::pointer_of(field)),
            (None, Some(column)) => {
                let &[separator] = separator.as_bytes() else {
                    return Err(invalid(format!(
                        "separator {separator:?}: must be a single byte"
                    )));
                };
                Extractor::delimited(column, separator)
            }
            (None, None) => Extractor::WholeValue,
        };
        let db = self.handle()?;
        let def = IndexDef::new(name, extractor);
        py.detach(|| {
            db.add_index(def)?;
            if wait { db.wait_for_backfill() } else { Ok(()) }
        })
        .map_err(to_py)
    }

    /// Drops value index `name`.
    fn drop_index(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        let db = self.handle()?;
        py.detach(|| db.drop_index(name)).map_err(to_py)
    }

    /// The value indexes, as dicts.
    fn indexes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let db = self.handle()?;
        let list = PyList::empty(py);
        for index in db.indexes() {
            list.append(index_info(py, &index)?)?;
        }
        Ok(list)
    }

    /// Waits until every table carries a leaf of every value index.
    fn wait_for_backfill(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.handle()?;
        py.detach(|| db.wait_for_backfill()).map_err(to_py)
    }

    /// Counters since open and the shape of the store, as a dict.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let db = self.handle()?;
        let stats = py.detach(|| db.stats());
        db_stats(py, &stats)
    }

    /// Checks every checksum and filter of the live tables, while the
    /// database stays open: the memtables are flushed, and a checkpoint in
    /// a directory inside the database's is verified, then removed.
    /// Returns the report as a dict (`clean`, `problems`, ...).
    fn verify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let db = self.handle()?;
        let report = py.detach(|| db.verify()).map_err(to_py)?;
        verify_report(py, &report)
    }

    /// Writes a copy of the database into `path` (a new directory) that
    /// opens as a database; tables are hard links where possible.
    fn checkpoint(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let db = self.handle()?;
        py.detach(|| db.checkpoint(&path)).map_err(to_py)
    }

    /// Compacts the whole database into its last level.
    fn compact(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.handle()?;
        py.detach(|| db.compact()).map_err(to_py)
    }

    /// Writes the memtables to tables.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.handle()?;
        py.detach(|| db.flush()).map_err(to_py)
    }
}

impl Db {
    fn scan(
        &self,
        start: Option<Data<'_>>,
        stop: Option<Data<'_>>,
        prefix: Option<Data<'_>>,
        reverse: bool,
        yields: Yields,
    ) -> PyResult<Entries> {
        let db = self.handle()?;
        Ok(span(start, stop, prefix, reverse).scan(&*db, yields))
    }
}

/// The span of a scan's arguments.
pub fn span(
    start: Option<Data<'_>>,
    stop: Option<Data<'_>>,
    prefix: Option<Data<'_>>,
    reverse: bool,
) -> Span {
    Span {
        start: start.map(|d| d.to_vec()),
        stop: stop.map(|d| d.to_vec()),
        prefix: prefix.map(|d| d.to_vec()),
        reverse,
    }
}

/// The value of `key` through `reader`: from memory with the GIL held
/// where it can be (a missing key the filters rule out, a cached block),
/// else read with the GIL released. Releasing and retaking the GIL costs
/// more than such an answer from memory.
fn read_value(py: Python<'_>, reader: &dyn Reader, key: &[u8]) -> PyResult<Option<Vec<u8>>> {
    match reader.get_in_memory(key).map_err(to_py)? {
        InMemory::Answer(value) => Ok(value),
        InMemory::NeedsRead => py.detach(|| reader.get(key)).map_err(to_py),
    }
}

/// `get(key, default)` through `reader`.
pub fn get_or<'py>(
    py: Python<'py>,
    reader: &dyn Reader,
    key: &[u8],
    default: Option<Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(bytes_or(py, read_value(py, reader, key)?, default))
}

/// `key in reader`.
pub fn contains(py: Python<'_>, reader: &dyn Reader, key: &[u8]) -> PyResult<bool> {
    Ok(read_value(py, reader, key)?.is_some())
}

/// `reader[key]`: the value, or `KeyError(key)`.
pub fn get_item<'py>(
    py: Python<'py>,
    reader: &dyn Reader,
    key: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let bytes: Data<'_> = key.extract()?;
    match read_value(py, reader, &bytes)? {
        Some(value) => Ok(to_bytes(py, &value).into_any()),
        None => Err(PyKeyError::new_err(key.clone().unbind())),
    }
}
