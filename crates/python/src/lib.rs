//! `siftdb` for Python: the engine's public API as a module that feels
//! like Python (a mapping, lazy iterators, context managers, exceptions).
//! The package's Python half (`python/siftdb/`) re-exports this module,
//! `siftdb._native`, and adds what is plain Python (`run_transaction`).

mod batch;
mod bytes;
mod client;
mod closing;
mod db;
mod errors;
mod iter;
mod open;
mod read;
mod snapshot;
mod stats;
mod txn;

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Checks every checksum and filter of the closed database at `path`
/// (and the WALs its next open would replay); returns the report as a
/// dict. Raises `LockedError` if it is open: `Db.verify()` checks an open
/// one.
#[pyfunction]
fn verify<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let report = py
        .detach(|| siftdb::verify(&path, &mut |_| {}))
        .map_err(errors::to_py)?;
    stats::verify_report(py, &report)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<db::Db>()?;
    m.add_class::<snapshot::Snapshot>()?;
    m.add_class::<batch::WriteBatch>()?;
    m.add_class::<txn::Transaction>()?;
    m.add_class::<iter::Entries>()?;
    m.add_class::<client::Client>()?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    errors::register(m)?;
    Ok(())
}
