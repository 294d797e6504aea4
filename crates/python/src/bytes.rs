//! Keys and values from Python: `bytes` (borrowed, not copied), `str`
//! (encoded as UTF-8) and `bytearray` (copied: it can change while the GIL
//! is released). `memoryview` is refused: the buffer protocol is outside
//! the stable ABI before Python 3.11.

use std::borrow::Cow;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};

/// Bytes of a key or value given from Python.
pub struct Data<'a>(Cow<'a, [u8]>);

impl std::ops::Deref for Data<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<[u8]> for Data<'_> {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Data<'a> {
    type Error = PyErr;

    fn extract(object: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if object.is_instance_of::<PyBytes>() {
            let bytes = <&'a [u8] as FromPyObject<'a, 'py>>::extract(object)?;
            return Ok(Data(Cow::Borrowed(bytes)));
        }
        if let Ok(text) = object.cast::<PyString>() {
            return Ok(Data(Cow::Owned(text.to_cow()?.into_owned().into_bytes())));
        }
        if let Ok(array) = object.cast::<PyByteArray>() {
            return Ok(Data(Cow::Owned(array.to_vec())));
        }
        Err(PyTypeError::new_err(format!(
            "expected bytes, str or bytearray, got {}",
            object.get_type().name()?
        )))
    }
}

/// Python `bytes` holding `data`.
pub fn to_bytes<'py>(py: Python<'py>, data: &[u8]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, data)
}

/// A found value as Python `bytes`, or `default` if there is none: what a
/// `get(key, default)` returns.
pub fn bytes_or<'py>(
    py: Python<'py>,
    value: Option<Vec<u8>>,
    default: Option<Bound<'py, PyAny>>,
) -> Option<Bound<'py, PyAny>> {
    match value {
        Some(value) => Some(to_bytes(py, &value).into_any()),
        None => default,
    }
}
