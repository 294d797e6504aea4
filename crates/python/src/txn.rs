//! `siftdb.Transaction`: an optimistic serializable transaction.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::bytes::{Data, bytes_or, to_bytes};
use crate::closing::{Child, Children, closed_error};
use crate::db::span;
use crate::errors::{invalid, to_py};

/// A transaction: reads see the database as of its start plus its own
/// writes, and its writes are applied together by `commit()`, which raises
/// `ConflictError` if a key it read or wrote (or a range it scanned) was
/// written by another commit since it began. As a context manager it
/// commits when its block ends without an exception, and rolls back
/// otherwise. Its database's `close()` rolls it back: its calls then raise
/// `ClosedError`.
#[pyclass(module = "siftdb", frozen)]
pub struct Transaction {
    state: Arc<Shared>,
}

/// Where a transaction is. Only locked with the GIL released: a thread
/// holding it may be reading.
struct Shared(Mutex<State>);

#[expect(
    clippy::large_enum_variant,
    reason = "one per transaction, always created open: boxing saves no memory"
)]
enum State {
    Open(siftdb::Transaction),
    /// Committed or rolled back.
    Finished,
    /// Rolled back by its database's `close()`.
    Closed,
}

impl Child for Shared {
    fn close(&self) {
        let ended = std::mem::replace(&mut *self.lock(), State::Closed);
        drop(ended);
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Transaction {
    /// A transaction that `parent` (its database's children) closes.
    pub fn adopted(txn: siftdb::Transaction, parent: &Children) -> PyResult<Self> {
        let state = Arc::new(Shared(Mutex::new(State::Open(txn))));
        parent.adopt(state.clone())?;
        Ok(Self { state })
    }

    /// Runs `work` on the open transaction with the GIL released.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        work: impl FnOnce(&mut siftdb::Transaction) -> siftdb::Result<T> + Send,
    ) -> PyResult<T> {
        let outcome = py.detach(|| match &mut *self.state.lock() {
            State::Open(txn) => Ok(work(txn)),
            ended => Err(Ended::of(ended)),
        });
        outcome.map_err(Ended::error)?.map_err(to_py)
    }
}

/// Ends the transaction in `state`: the open one it was, if it was. The
/// caller commits or drops it with the lock held, so that a `close()` of
/// the database meanwhile waits for that.
fn take(state: &mut State) -> Result<siftdb::Transaction, Ended> {
    match std::mem::replace(state, State::Finished) {
        State::Open(txn) => Ok(txn),
        ended => {
            let why = Ended::of(&ended);
            *state = ended;
            Err(why)
        }
    }
}

/// Why a transaction takes no more calls.
#[derive(Clone, Copy)]
enum Ended {
    Finished,
    Closed,
}

impl Ended {
    /// Of a state that is not `Open`.
    fn of(state: &State) -> Self {
        match state {
            State::Closed => Ended::Closed,
            State::Open(_) | State::Finished => Ended::Finished,
        }
    }

    fn error(self) -> PyErr {
        match self {
            Ended::Finished => invalid("the transaction has already been committed or rolled back"),
            Ended::Closed => closed_error(),
        }
    }
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
        let outcome = py.detach(|| {
            let mut state = self.state.lock();
            take(&mut state).map(siftdb::Transaction::commit)
        });
        outcome.map_err(Ended::error)?.map_err(to_py)
    }

    /// Drops the writes; nothing is applied. Rolling back a transaction
    /// that already ended (or whose database closed) does nothing.
    fn rollback(&self, py: Python<'_>) {
        py.detach(|| {
            let mut state = self.state.lock();
            drop(take(&mut state));
        });
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*exc))]
    fn __exit__(&self, py: Python<'_>, exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        let finished = py.detach(|| matches!(*self.state.lock(), State::Finished));
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
