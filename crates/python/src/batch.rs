//! `siftdb.WriteBatch`: writes applied together, atomically.

use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::bytes::Data;
use crate::db::{Db, write_options};
use crate::errors::to_py;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// Puts and deletes collected in memory and applied as one atomic write
/// (one WAL record): all of them or none survive a crash. As a context
/// manager it is applied when its block ends without an exception, and
/// dropped otherwise.
#[pyclass(module = "siftdb", frozen)]
pub struct WriteBatch {
    db: Py<Db>,
    /// Never held while the GIL is released.
    batch: Mutex<siftdb::WriteBatch>,
    sync: Option<bool>,
}

impl WriteBatch {
    pub fn new(db: Py<Db>, sync: Option<bool>) -> Self {
        Self {
            db,
            batch: Mutex::new(siftdb::WriteBatch::new()),
            sync,
        }
    }

    fn lock(&self) -> MutexGuard<'_, siftdb::WriteBatch> {
        self.batch.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[pymethods]
impl WriteBatch {
    /// Adds a put of `value` under `key`.
    fn put(&self, key: Data<'_>, value: Data<'_>) {
        self.lock().insert(&key, &value);
    }

    fn __setitem__(&self, key: Data<'_>, value: Data<'_>) {
        self.put(key, value);
    }

    /// Adds a delete of `key`.
    fn delete(&self, key: Data<'_>) {
        self.lock().remove(&key);
    }

    fn __delitem__(&self, key: Data<'_>) {
        self.delete(key);
    }

    /// The writes collected.
    fn __len__(&self) -> usize {
        self.lock().len()
    }

    /// Drops the writes collected.
    fn clear(&self) {
        self.lock().clear();
    }

    /// Applies the writes collected, atomically, and empties the batch.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let batch = std::mem::take(&mut *self.lock());
        if batch.is_empty() {
            return Ok(());
        }
        let db = self.db.get().handle()?;
        py.detach(|| db.write_with(&batch, write_options(self.sync)))
            .map_err(to_py)
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*exc))]
    fn __exit__(&self, py: Python<'_>, exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        if exc.get_item(0).is_ok_and(|kind| !kind.is_none()) {
            self.clear();
        } else {
            self.commit(py)?;
        }
        Ok(false)
    }
}
