//! `siftdb.Transaction`: an optimistic serializable transaction.

use std::sync::{Mutex, MutexGuard, PoisonError};

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::bytes::{Data, bytes_or, to_bytes};
use crate::db::span;
use crate::errors::{invalid, to_py};

/// A transaction: reads see the database as of its start plus its own
/// writes, and its writes are applied together by `commit()`, which raises
/// `ConflictError` if a key it read or wrote (or a range it scanned) was
/// written by another commit since it began. As a context manager it
/// commits when its block ends without an exception, and rolls back
/// otherwise.
#[pyclass(module = "siftdb", frozen)]
pub struct Transaction {
    /// `None` once committed or rolled back. Only locked with the GIL
    /// released: a thread holding it may be reading.
    txn: Mutex<Option<siftdb::Transaction>>,
}

impl Transaction {
    pub fn new(txn: siftdb::Transaction) -> Self {
        Self {
            txn: Mutex::new(Some(txn)),
        }
    }

    /// Runs `work` on the open transaction with the GIL released.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        work: impl FnOnce(&mut siftdb::Transaction) -> siftdb::Result<T> + Send,
    ) -> PyResult<T> {
        let outcome = py.detach(|| self.lock().as_mut().map(work));
        outcome.ok_or_else(finished)?.map_err(to_py)
    }

    fn lock(&self) -> MutexGuard<'_, Option<siftdb::Transaction>> {
        self.txn.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn finished() -> PyErr {
    invalid("the transaction has already been committed or rolled back")
}

#[pymethods]
impl Transaction {
    /// The value of `key` (its own write if it made one), or `default`.
    #[pyo3(signature = (key, default=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: Data<'_>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let value = self.with(py, |txn| txn.get(&key))?;
        Ok(bytes_or(py, value, default))
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let bytes: Data<'_> = key.extract()?;
        match self.with(py, |txn| txn.get(&bytes))? {
            Some(value) => Ok(to_bytes(py, &value).into_any()),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __contains__(&self, py: Python<'_>, key: Data<'_>) -> PyResult<bool> {
        self.with(py, |txn| txn.contains_key(&key))
    }

    /// Writes `value` under `key` when the transaction commits.
    fn put(&self, py: Python<'_>, key: Data<'_>, value: Data<'_>) -> PyResult<()> {
        self.with(py, |txn| txn.insert(&key, &value))
    }

    fn __setitem__(&self, py: Python<'_>, key: Data<'_>, value: Data<'_>) -> PyResult<()> {
        self.put(py, key, value)
    }

    /// Deletes `key` when the transaction commits.
    fn delete(&self, py: Python<'_>, key: Data<'_>) -> PyResult<()> {
        self.with(py, |txn| txn.remove(&key))
    }

    fn __delitem__(&self, py: Python<'_>, key: Data<'_>) -> PyResult<()> {
        self.delete(py, key)
    }

    /// The `(key, value)` pairs of a range, its own writes included, as a
    /// list: the range counts as read (a commit that wrote into it since
    /// the transaction began makes this one conflict).
    #[pyo3(signature = (start=None, stop=None, *, prefix=None))]
    fn items<'py>(
        &self,
        py: Python<'py>,
        start: Option<Data<'_>>,
        stop: Option<Data<'_>>,
        prefix: Option<Data<'_>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let bounds = span(start, stop, prefix, false).bounds();
        let entries = self.with(py, |txn| {
            txn.range(bounds)?.collect::<siftdb::Result<Vec<_>>>()
        })?;
        let list = PyList::empty(py);
        for (key, value) in entries {
            list.append(PyTuple::new(
                py,
                [to_bytes(py, &key), to_bytes(py, &value)],
            )?)?;
        }
        Ok(list)
    }

    /// Validates and applies the writes; returns the sequence number they
    /// were written at. Raises `ConflictError` (nothing applied) if another
    /// commit got in the way: run the transaction again.
    fn commit(&self, py: Python<'_>) -> PyResult<u64> {
        let outcome = py.detach(|| self.lock().take().map(siftdb::Transaction::commit));
        outcome.ok_or_else(finished)?.map_err(to_py)
    }

    /// Drops the writes; nothing is applied.
    fn rollback(&self, py: Python<'_>) {
        let txn = py.detach(|| self.lock().take());
        drop(txn);
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*exc))]
    fn __exit__(&self, py: Python<'_>, exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        let finished = py.detach(|| self.lock().is_none());
        if finished {
            return Ok(false);
        }
        if exc.get_item(0).is_ok_and(|kind| !kind.is_none()) {
            self.rollback(py);
        } else {
            self.commit(py)?;
        }
        Ok(false)
    }
}
