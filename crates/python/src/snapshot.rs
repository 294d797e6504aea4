//! `siftdb.Snapshot`: reads as of one moment.

use pyo3::prelude::*;

use crate::bytes::Data;
use crate::db::{contains, get_item, get_or, span};
use crate::iter::{Entries, Yields};
use crate::read::find;

/// A consistent view of the database as of the moment `Db.snapshot()` was
/// called: no later write shows in its reads. It keeps the tables it reads
/// until it is dropped.
#[pyclass(module = "siftdb", frozen)]
pub struct Snapshot {
    snapshot: siftdb::Snapshot,
}

impl Snapshot {
    pub fn new(snapshot: siftdb::Snapshot) -> Self {
        Self { snapshot }
    }
}

#[pymethods]
impl Snapshot {
    /// The sequence number it reads at.
    #[getter]
    fn seq(&self) -> u64 {
        self.snapshot.seq()
    }

    /// The value of `key` as of the snapshot, or `default`.
    #[pyo3(signature = (key, default=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: Data<'_>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        get_or(py, &self.snapshot, &key, default)
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        get_item(py, &self.snapshot, key)
    }

    fn __contains__(&self, py: Python<'_>, key: Data<'_>) -> PyResult<bool> {
        contains(py, &self.snapshot, &key)
    }

    /// As `Db.items`, as of the snapshot.
    #[pyo3(signature = (start=None, stop=None, *, prefix=None, reverse=false))]
    fn items(
        &self,
        start: Option<Data<'_>>,
        stop: Option<Data<'_>>,
        prefix: Option<Data<'_>>,
        reverse: bool,
    ) -> Entries {
        span(start, stop, prefix, reverse).scan(&self.snapshot, Yields::Items)
    }

    /// As `Db.keys`, as of the snapshot.
    #[pyo3(signature = (start=None, stop=None, *, prefix=None, reverse=false))]
    fn keys(
        &self,
        start: Option<Data<'_>>,
        stop: Option<Data<'_>>,
        prefix: Option<Data<'_>>,
        reverse: bool,
    ) -> Entries {
        span(start, stop, prefix, reverse).scan(&self.snapshot, Yields::Keys)
    }

    /// As `Db.values`, as of the snapshot.
    #[pyo3(signature = (start=None, stop=None, *, prefix=None, reverse=false))]
    fn values(
        &self,
        start: Option<Data<'_>>,
        stop: Option<Data<'_>>,
        prefix: Option<Data<'_>>,
        reverse: bool,
    ) -> Entries {
        span(start, stop, prefix, reverse).scan(&self.snapshot, Yields::Values)
    }

    fn __iter__(&self) -> Entries {
        span(None, None, None, false).scan(&self.snapshot, Yields::Keys)
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
        find(py, &self.snapshot, index, &value, limit, method)
    }
}
