//! The exception hierarchy: every error of `siftdb` is a `SiftError`, and
//! each kind of failure a subclass a caller can catch on its own. Where the
//! engine names a file (and an offset), the exception carries them as
//! attributes, `path` and `offset`; a conflict carries its `key`.

use pyo3::exceptions::{PyException, PyOSError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyType};
use pyo3::{PyErr, create_exception};
use sift_raft::{ReadError, WriteError};

create_exception!(
    siftdb,
    SiftError,
    PyException,
    "Base class of every error raised by siftdb."
);
create_exception!(
    siftdb,
    CorruptionError,
    SiftError,
    "Bytes read back are not what Sift wrote; `path` and `offset` say where."
);
/// `SiftIOError`: a `SiftError` and an `OSError` both, so that `except
/// OSError` catches it. `create_exception!` gives a class one base, so this
/// one is made as Python's `class` statement would make it.
static SIFT_IO_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

const SIFT_IO_ERROR_DOC: &str = "The operating system refused an operation on `path`. \
    An OSError too: `errno` and `filename` say what it reported, where it gave an error number.";

/// The `SiftIOError` class, made at its first use.
fn sift_io_error(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    SIFT_IO_ERROR
        .get_or_try_init(py, || {
            let namespace = PyDict::new(py);
            namespace.set_item("__doc__", SIFT_IO_ERROR_DOC)?;
            namespace.set_item("__module__", "siftdb")?;
            let bases = (py.get_type::<SiftError>(), py.get_type::<PyOSError>());
            let class = py
                .get_type::<PyType>()
                .call1(("SiftIOError", bases, namespace))?;
            Ok(class.cast_into::<PyType>()?.unbind())
        })
        .map(|class| class.bind(py))
}

create_exception!(
    siftdb,
    InvalidArgumentError,
    SiftError,
    "An argument Sift cannot accept: a key or value too large, an unknown index, a bad option."
);
create_exception!(
    siftdb,
    LockedError,
    SiftError,
    "Another handle, in this process or another, has the database at `path` open."
);
create_exception!(
    siftdb,
    ClosedError,
    SiftError,
    "The database was closed (or the snapshot this was read from)."
);
create_exception!(
    siftdb,
    ReadOnlyError,
    SiftError,
    "The database at `path` was opened with read_only=True: it takes no writes, flushes, compactions or index changes."
);
create_exception!(
    siftdb,
    BackgroundError,
    SiftError,
    "A background flush or compaction failed: writes are refused until the database is reopened."
);
create_exception!(
    siftdb,
    ConflictError,
    SiftError,
    "A transaction could not commit: `key` was written by another commit after its snapshot. Nothing was applied; run it again."
);
create_exception!(
    siftdb,
    UnavailableError,
    SiftError,
    "No node of the cluster answered before the client gave up; nothing was applied. Safe to retry."
);
create_exception!(
    siftdb,
    OutcomeUnknownError,
    SiftError,
    "A write may or may not have been applied (an attempt was lost after it was sent). Read before writing again."
);
create_exception!(
    siftdb,
    UnauthorizedError,
    SiftError,
    "The cluster refused the client's token, or its lack of one (give Client(token=...) the nodes' token); nothing was applied."
);
create_exception!(
    siftdb,
    NodeFailedError,
    SiftError,
    "A node's storage failed or its Raft stopped: its operator must look."
);

/// Adds the hierarchy to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("SiftError", py.get_type::<SiftError>())?;
    m.add("CorruptionError", py.get_type::<CorruptionError>())?;
    m.add("SiftIOError", sift_io_error(py)?)?;
    m.add(
        "InvalidArgumentError",
        py.get_type::<InvalidArgumentError>(),
    )?;
    m.add("LockedError", py.get_type::<LockedError>())?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    m.add("ReadOnlyError", py.get_type::<ReadOnlyError>())?;
    m.add("BackgroundError", py.get_type::<BackgroundError>())?;
    m.add("ConflictError", py.get_type::<ConflictError>())?;
    m.add("UnavailableError", py.get_type::<UnavailableError>())?;
    m.add("OutcomeUnknownError", py.get_type::<OutcomeUnknownError>())?;
    m.add("NodeFailedError", py.get_type::<NodeFailedError>())?;
    m.add("UnauthorizedError", py.get_type::<UnauthorizedError>())?;
    Ok(())
}

/// The exception for an engine error, with its attributes.
pub fn to_py(error: siftdb::Error) -> PyErr {
    let message = error.to_string();
    Python::attach(|py| {
        let (exception, attributes): (PyErr, Vec<(&str, Py<PyAny>)>) = match error {
            siftdb::Error::Io { path, source } => (
                io_error(py, message, &path, &source),
                vec![("path", path_object(py, &path))],
            ),
            siftdb::Error::Corruption { path, offset, .. } => (
                CorruptionError::new_err(message),
                vec![
                    ("path", path_object(py, &path)),
                    (
                        "offset",
                        offset
                            .into_pyobject(py)
                            .map_or_else(|_| py.None(), |o| o.into_any().unbind()),
                    ),
                ],
            ),
            siftdb::Error::InvalidArgument(_) => (InvalidArgumentError::new_err(message), vec![]),
            siftdb::Error::Locked { path } => (
                LockedError::new_err(message),
                vec![("path", path_object(py, &path))],
            ),
            siftdb::Error::ReadOnly { path } => (
                ReadOnlyError::new_err(message),
                vec![("path", path_object(py, &path))],
            ),
            siftdb::Error::Background(_) => (BackgroundError::new_err(message), vec![]),
            siftdb::Error::Closed => (ClosedError::new_err(message), vec![]),
            siftdb::Error::Conflict { key, .. } => (
                ConflictError::new_err(message),
                vec![(
                    "key",
                    key.map_or_else(|| py.None(), |k| PyBytes::new(py, &k).into_any().unbind()),
                )],
            ),
            _ => (SiftError::new_err(message), vec![]),
        };
        for (name, value) in attributes {
            // Setting an attribute on a fresh exception cannot fail short of
            // memory; the exception is still worth raising without it.
            let _ = exception.value(py).setattr(name, value);
        }
        exception
    })
}

/// A `SiftIOError`. With the operating system's error number it is made as
/// Python makes an `OSError` (`errno`, `strerror`, `filename`, and the
/// message `[Errno 2] No such file or directory: 'path'`); without one it
/// carries the engine's message alone.
fn io_error(
    py: Python<'_>,
    message: String,
    path: &std::path::Path,
    source: &std::io::Error,
) -> PyErr {
    let Ok(class) = sift_io_error(py) else {
        return SiftError::new_err(message);
    };
    match source.raw_os_error() {
        Some(code) => {
            let strerror = py
                .import("os")
                .and_then(|os| os.call_method1("strerror", (code,)))
                .map_or_else(|_| source.to_string(), |text| text.to_string());
            PyErr::from_type(class.clone(), (code, strerror, path_object(py, path)))
        }
        None => PyErr::from_type(class.clone(), (message,)),
    }
}

/// A path as Python's `str` (lossy for names that are not UTF-8).
fn path_object(py: Python<'_>, path: &std::path::Path) -> Py<PyAny> {
    pyo3::types::PyString::new(py, &path.to_string_lossy())
        .into_any()
        .unbind()
}

/// The exception for a cluster write that failed.
pub fn write_error(error: WriteError) -> PyErr {
    let message = error.to_string();
    match error {
        WriteError::Invalid(_) => InvalidArgumentError::new_err(message),
        WriteError::NotApplied(_) => UnavailableError::new_err(message),
        WriteError::Unknown(_) => OutcomeUnknownError::new_err(message),
        WriteError::Failed(_) => NodeFailedError::new_err(message),
        WriteError::Unauthorized(_) => UnauthorizedError::new_err(message),
    }
}

/// The exception for a cluster read that failed.
pub fn read_error(error: ReadError) -> PyErr {
    let message = error.to_string();
    match error {
        ReadError::Invalid(_) => InvalidArgumentError::new_err(message),
        ReadError::Unavailable(_) => UnavailableError::new_err(message),
        ReadError::Failed(_) => NodeFailedError::new_err(message),
        ReadError::Unauthorized(_) => UnauthorizedError::new_err(message),
    }
}

/// An `InvalidArgumentError` with `message`.
pub fn invalid(message: impl Into<String>) -> PyErr {
    InvalidArgumentError::new_err(message.into())
}
