//! `siftdb.Snapshot`: reads as of one moment.

use std::sync::Arc;

use pyo3::prelude::*;

use crate::bytes::Data;
use crate::closing::{Child, Children, Open, Slot};
use crate::db::{contains, get_item, get_or, span};
use crate::iter::{Entries, Yields};
use crate::read::{Span, find};

/// A consistent view of the database as of the moment `Db.snapshot()` was
/// called: no later write shows in its reads. It keeps the tables it reads
/// until it is closed: by `close()`, at the end of its `with` block, by its
/// database's `close()`, or when it is garbage-collected. A closed one
/// raises `ClosedError`, and so do the iterators made from it.
#[pyclass(module = "siftdb", frozen)]
pub struct Snapshot {
    state: Arc<State>,
}

/// What the `Db` closes when it closes: the engine's snapshot and the
/// iterators read from it (each pins the tables on its own).
struct State {
    snapshot: Slot<siftdb::Snapshot>,
    iterators: Children,
    /// The database's children: the iterators are its too, so that its
    /// `close()` ends those that outlive this snapshot's Python object.
    database: Arc<Children>,
}

impl Child for State {
    fn close(&self) {
        drop(self.snapshot.take());
        self.iterators.close_all();
    }
}

impl Snapshot {
    /// A snapshot that `parent` (its database's children) closes.
    pub fn adopted(snapshot: siftdb::Snapshot, parent: &Arc<Children>) -> PyResult<Self> {
        let state = Arc::new(State {
            snapshot: Slot::new(snapshot, "the snapshot is closed"),
            iterators: Children::default(),
            database: Arc::clone(parent),
        });
        parent.adopt(state.clone())?;
        Ok(Self { state })
    }

    fn open(&self) -> PyResult<Open<siftdb::Snapshot>> {
        self.state.snapshot.load()
    }

    /// The entries of `span`, as of the snapshot.
    fn scan(&self, span: Span, yields: Yields) -> PyResult<Entries> {
        self.adopt(span.scan(&*self.open()?, yields))
    }

    /// `entries`, read from this snapshot: closed with it, or with the
    /// database.
    fn adopt(&self, entries: Entries) -> PyResult<Entries> {
        self.state.database.adopt(entries.child())?;
        self.state.iterators.adopt(entries.child())?;
        Ok(entries)
    }
}

#[pymethods]
impl Snapshot {
    /// The sequence number it reads at.
    #[getter]
    fn seq(&self) -> PyResult<u64> {
        Ok(self.open()?.seq())
    }

    /// Whether it was closed (by `close()` or its database's).
    #[getter]
    fn closed(&self) -> bool {
        self.state.snapshot.is_closed()
    }

    /// Releases the tables it keeps, and ends the iterators made from it.
    /// Later calls raise `ClosedError`; closing twice does nothing.
    fn close(&self, py: Python<'_>) {
        py.detach(|| self.state.close());
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }

    /// The value of `key` as of the snapshot, or `default`.
    #[pyo3(signature = (key, default=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: Data<'_>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        get_or(py, &*self.open()?, &key, default)
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        get_item(py, &*self.open()?, key)
    }

    fn __contains__(&self, py: Python<'_>, key: Data<'_>) -> PyResult<bool> {
        contains(py, &*self.open()?, &key)
    }

    /// As `Db.items`, as of the snapshot.
    #[pyo3(signature = (start=None, stop=None, *, prefix=None, reverse=false))]
    fn items(
        &self,
        start: Option<Data<'_>>,
        stop: Option<Data<'_>>,
        prefix: Option<Data<'_>>,
        reverse: bool,
    ) -> PyResult<Entries> {
        self.scan(span(start, stop, prefix, reverse), Yields::Items)
    }

    /// As `Db.keys`, as of the snapshot.
    #[pyo3(signature = (start=None, stop=None, *, prefix=None, reverse=false))]
    fn keys(
        &self,
        start: Option<Data<'_>>,
        stop: Option<Data<'_>>,
        prefix: Option<Data<'_>>,
        reverse: bool,
    ) -> PyResult<Entries> {
        self.scan(span(start, stop, prefix, reverse), Yields::Keys)
    }

    /// As `Db.values`, as of the snapshot.
    #[pyo3(signature = (start=None, stop=None, *, prefix=None, reverse=false))]
    fn values(
        &self,
        start: Option<Data<'_>>,
        stop: Option<Data<'_>>,
        prefix: Option<Data<'_>>,
        reverse: bool,
    ) -> PyResult<Entries> {
        self.scan(span(start, stop, prefix, reverse), Yields::Values)
    }

    fn __iter__(&self) -> PyResult<Entries> {
        self.scan(span(None, None, None, false), Yields::Keys)
    }

    /// As `Db.find`, as of the snapshot.
    #[pyo3(signature = (index, value, *, limit=None, method=None))]
    fn find(
        &self,
        py: Python<'_>,
        index: &str,
        value: Data<'_>,
        limit: Option<usize>,
        method: Option<&str>,
    ) -> PyResult<Entries> {
        self.adopt(find(py, &*self.open()?, index, &value, limit, method)?)
    }
}
