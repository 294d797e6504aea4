//! `siftdb.Client`: the replicated cluster's client, over the Rust one.

use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use sift_raft::api::KeyValue;

use crate::bytes::{Data, bytes_or, to_bytes};
use crate::errors::{SiftError, read_error, write_error};

/// A client of a Sift cluster (`sift serve` nodes), given the address
/// (`host:port`) of one node or more. A request goes to the leader; while
/// the cluster has no leader, or a node cannot be reached, it is retried at
/// the next address for up to `retry_for` seconds. Writes carry a session,
/// so a retried write is applied once. `token`: the cluster's token, if its
/// nodes were started with `--token-file` (sent in clear: put TLS in front).
#[pyclass(module = "siftdb", frozen)]
pub struct Client {
    client: sift_raft::Client,
    runtime: tokio::runtime::Runtime,
}

#[pymethods]
impl Client {
    #[new]
    #[pyo3(signature = (addrs, *, retry_for=30.0, token=None))]
    fn new(addrs: Bound<'_, PyAny>, retry_for: f64, token: Option<&str>) -> PyResult<Self> {
        let addrs: Vec<String> = if let Ok(one) = addrs.extract::<String>() {
            vec![one]
        } else {
            addrs.extract()?
        };
        let retry_for = Duration::try_from_secs_f64(retry_for)
            .map_err(|e| crate::errors::invalid(format!("retry_for {retry_for}: {e}")))?;
        let mut client = sift_raft::Client::of_cluster(addrs)
            .ok_or_else(|| crate::errors::invalid("no address given"))?
            .retry_for(retry_for);
        if let Some(token) = token {
            let token = sift_raft::Token::new(token)
                .map_err(|why| crate::errors::invalid(format!("token: {why}")))?;
            client = client.with_token(token);
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| SiftError::new_err(format!("starting the client's runtime: {e}")))?;
        Ok(Self { client, runtime })
    }

    /// Sets `key` to `value`; returns once a quorum has applied it.
    fn put(&self, py: Python<'_>, key: Data<'_>, value: Data<'_>) -> PyResult<()> {
        py.detach(|| self.runtime.block_on(self.client.put(&key, &value)))
            .map(drop)
            .map_err(write_error)
    }

    /// Deletes `key`.
    fn delete(&self, py: Python<'_>, key: Data<'_>) -> PyResult<()> {
        py.detach(|| self.runtime.block_on(self.client.delete(&key)))
            .map(drop)
            .map_err(write_error)
    }

    /// The value of `key` (read linearizably), or `default`.
    #[pyo3(signature = (key, default=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: Data<'_>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let value = py
            .detach(|| self.runtime.block_on(self.client.get(&key)))
            .map_err(read_error)?;
        Ok(bytes_or(py, value, default))
    }

    /// Up to `limit` `(key, value)` pairs from `start` to `stop`
    /// (excluded), in key order, read page by page.
    #[pyo3(signature = (start=None, stop=None, *, limit=1000))]
    fn scan<'py>(
        &self,
        py: Python<'py>,
        start: Option<Data<'_>>,
        stop: Option<Data<'_>>,
        limit: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let lower = start.as_deref().unwrap_or_default();
        let entries = py
            .detach(|| {
                self.runtime
                    .block_on(self.client.scan(lower, stop.as_deref(), limit))
            })
            .map_err(read_error)?;
        pairs(py, &entries)
    }

    /// Up to `limit` `(key, value)` pairs whose value holds `value` by
    /// value index `index`, in key order.
    #[pyo3(signature = (index, value, *, limit=1000))]
    fn find<'py>(
        &self,
        py: Python<'py>,
        index: &str,
        value: Data<'_>,
        limit: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let entries = py
            .detach(|| {
                self.runtime
                    .block_on(self.client.find(index, &value, limit))
            })
            .map_err(read_error)?;
        pairs(py, &entries)
    }

    /// Defines value index `name` over JSON field `pointer` (a JSON
    /// Pointer, such as `/color`) on every node.
    fn add_index(&self, py: Python<'_>, name: &str, pointer: &str) -> PyResult<()> {
        py.detach(|| {
            self.runtime
                .block_on(self.client.define_index(name, pointer))
        })
        .map_err(write_error)
    }
}

/// Entries as a list of `(key, value)` tuples.
fn pairs<'py>(py: Python<'py>, entries: &[KeyValue]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for entry in entries {
        list.append(PyTuple::new(
            py,
            [to_bytes(py, &entry.key), to_bytes(py, &entry.value)],
        )?)?;
    }
    Ok(list)
}
