//! `siftdb.Db`: a database opened from Python, with the mapping protocol
//! (`db[key]`, `key in db`, `del db[key]`) over the engine's API.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::{PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyString};
use siftdb::{Extractor, InMemory, IndexDef, WriteOptions};

use crate::batch::WriteBatch;
use crate::bytes::{Data, bytes_or, to_bytes};
use crate::closing::{Children, Open, Slot};
use crate::errors::{invalid, to_py};
use crate::iter::{Entries, Yields};
use crate::open::Options;
use crate::read::{Reader, Span, find};
use crate::snapshot::Snapshot;
use crate::stats::{db_stats, index_info, verify_report};
use crate::txn::Transaction;

/// A Sift database: an embedded key-value store whose keys and values are
/// `bytes` (`str` is accepted and stored as UTF-8).
///
/// `Db(path, **options)` opens the database in directory `path`, creating
/// it if needed. Use it as a context manager, or call `close()`: that
/// releases the directory at once, and the snapshots, iterators and
/// transactions made from it raise `ClosedError` from then on. A handle
/// never closed is closed when it and all of those are garbage-collected.
///
/// `len(db)` is not offered: the count of live keys is not kept, and
/// counting them reads the whole store (`sum(1 for _ in db.keys())` does
/// that, and says so).
#[pyclass(module = "siftdb", frozen)]
pub struct Db {
    handle: Slot<siftdb::Db>,
    /// The snapshots, transactions and iterators made from it, which
    /// `close()` ends (each pins the engine's database). Shared with the
    /// snapshots, which add the iterators read from them.
    children: Arc<Children>,
    path: PathBuf,
    read_only: bool,
}

impl Db {
    /// The open engine handle, or `ClosedError`. A call holds it until it
    /// returns (a `close()` meanwhile ends the database after it).
    pub fn handle(&self) -> PyResult<Open<siftdb::Db>> {
        self.handle.load()
    }

    /// `entries`, made from this database, which its `close()` ends.
    fn adopt(&self, entries: Entries) -> PyResult<Entries> {
        self.children.adopt(entries.child())?;
        Ok(entries)
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
    /// `direct_reads` (read table files around the page cache, O_DIRECT;
    /// default False), `sync_writes` (every write fsynced before it returns; default
    /// False), `compression` (`"none"` or `"lz4"`), `background_threads`
    /// (flush and compact on background threads; default True) and
    /// `compaction_threads`.
    ///
    /// Modes: `read_only=True` opens without changing anything in the
    /// directory and without taking its lock, so a database another
    /// handle or process holds opens too, as of its files now; every change
    /// raises `ReadOnlyError`. `create_if_missing=False` refuses a
    /// directory without a database (`InvalidArgumentError`) instead of
    /// creating one; a read-only open never creates.
    #[new]
    #[pyo3(signature = (
        path, *, memtable_bytes=None, block_cache_bytes=None, filter_memory_bytes=None,
        table_target_bytes=None, block_bytes=None, max_open_files=None, direct_reads=None,
        sync_writes=None,
        compression=None, background_threads=None, compaction_threads=None,
        read_only=false, create_if_missing=None,
    ))]
    #[expect(
        clippy::too_many_arguments,
        reason = "Python's keyword options, one each"
    )]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        memtable_bytes: Option<i128>,
        block_cache_bytes: Option<i128>,
        filter_memory_bytes: Option<i128>,
        table_target_bytes: Option<i128>,
        block_bytes: Option<i128>,
        max_open_files: Option<i128>,
        direct_reads: Option<bool>,
        sync_writes: Option<bool>,
        compression: Option<&str>,
        background_threads: Option<bool>,
        compaction_threads: Option<i128>,
        read_only: bool,
        create_if_missing: Option<bool>,
    ) -> PyResult<Self> {
        let builder = Options {
            memtable_bytes,
            block_cache_bytes,
            filter_memory_bytes,
            table_target_bytes,
            block_bytes,
            max_open_files,
            direct_reads,
            sync_writes,
            compression,
            background_threads,
            compaction_threads,
            read_only,
            create_if_missing,
        }
        .builder(&path)?;
        let db = py.detach(|| builder.open()).map_err(to_py)?;
        Ok(Self {
            handle: Slot::new(db, "the database is closed"),
            children: Arc::default(),
            path,
            read_only,
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
        self.handle.is_closed()
    }

    /// Whether it was opened with `read_only=True`.
    #[getter]
    fn read_only(&self) -> bool {
        self.read_only
    }

    /// Closes the database: background work ends, the WAL is synced, and
    /// the directory's lock and files are released, even while snapshots,
    /// transactions or iterators made from it are still referenced (they
    /// raise `ClosedError` from then on; a transaction is rolled back).
    /// Later calls raise `ClosedError`; closing twice does nothing.
    fn close(&self, py: Python<'_>) {
        let db = self.handle.take();
        py.detach(|| {
            // The children first: each holds the engine's database, which
            // lets go of the directory when the last of them is dropped.
            self.children.close_all();
            // Dropping the handle joins the background threads.
            drop(db);
        });
    }

    /// The database itself; `ClosedError` if it was closed (a `with`
    /// block would otherwise run on a handle that refuses every call).
    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        slf.get().handle()?;
        Ok(slf)
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
    /// read together. `keys` is an iterable of keys: a single `str` or
    /// `bytes` is refused, not read as its characters or bytes.
    fn multi_get<'py>(
        &self,
        py: Python<'py>,
        keys: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let db = self.handle()?;
        refuse_single_key(&keys)?;
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
        Snapshot::adopted(self.handle()?.snapshot(), &self.children)
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
        Transaction::adopted(self.handle()?.transaction(), &self.children)
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
        self.adopt(find(py, &*db, index, &value, limit, method)?)
    }

    /// Adds value index `name`: over JSON field `field` (a top-level name,
    /// or a JSON Pointer such as `/user/name` for a nested one; a dotted
    /// name is refused as ambiguous), over column `column` of delimited
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
            (Some(field), None) => Extractor::json_field(json_pointer(field)?),
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
        self.adopt(span(start, stop, prefix, reverse).scan(&*db, yields))
    }
}

/// Refuses a `str`, `bytes` or `bytearray` where an iterable of keys is
/// expected: iterating one would look up each character or byte.
fn refuse_single_key(keys: &Bound<'_, PyAny>) -> PyResult<()> {
    if keys.is_instance_of::<PyString>()
        || keys.is_instance_of::<PyBytes>()
        || keys.is_instance_of::<PyByteArray>()
    {
        return Err(PyTypeError::new_err(format!(
            "multi_get takes an iterable of keys, not a single key ({}): use get, or [key]",
            keys.get_type().name()?
        )));
    }
    Ok(())
}

/// The JSON Pointer of `add_index(field=...)`: a pointer as given, a name
/// as the top-level field of that name. A dotted name is refused: a user
/// may mean a nested field (which the engine would not look into) or a
/// field whose name holds a dot, and guessing wrong indexes nothing.
fn json_pointer(field: &str) -> PyResult<String> {
    if field.starts_with('/') || !field.contains('.') {
        return Ok(Extractor::pointer_of(field));
    }
    let nested: String = field
        .split('.')
        .map(|part| format!("/{}", part.replace('~', "~0").replace('/', "~1")))
        .collect();
    Err(invalid(format!(
        "field {field:?}: a dotted name is ambiguous; give a JSON Pointer: {nested:?} for the \
         nested field, or {:?} for a top-level field of that name",
        Extractor::pointer_of(field)
    )))
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
