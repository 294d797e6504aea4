//! Lazy iterators over entries: a range scan or a search by value, read a
//! batch of entries at a time with the GIL released, and handed to Python
//! one by one.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::bytes::to_bytes;
use crate::closing::Child;
use crate::errors::to_py;
use crate::stats::find_stats;

/// An entry as the engine yields it.
type Entry = (Vec<u8>, Vec<u8>);

/// A scan's entries, boxed so that every kind of range shares one class.
pub type Scan = Box<dyn Iterator<Item = siftdb::Result<Entry>> + Send>;

/// What each step of an iterator gives Python.
#[derive(Clone, Copy)]
pub enum Yields {
    Items,
    Keys,
    Values,
}

/// Entries read ahead of Python at most: a batch grows from the first
/// (so a loop that stops early reads little) up to this.
const MAX_BATCH: usize = 256;

/// Where the entries come from.
enum Source {
    Scan(Scan),
    /// A search by value, with the results it may still return.
    Find {
        find: siftdb::Find,
        left: Option<usize>,
    },
    /// Dropped by its database's (or snapshot's) `close()`.
    Closed,
}

impl Source {
    fn next(&mut self) -> Option<siftdb::Result<Entry>> {
        match self {
            Source::Scan(scan) => scan.next(),
            Source::Find { find, left } => {
                if *left == Some(0) {
                    return None;
                }
                let next = find.next();
                if let (Some(Ok(_)), Some(left)) = (&next, left) {
                    *left -= 1;
                }
                next
            }
            Source::Closed => None,
        }
    }
}

/// The source and what was read ahead of Python.
struct State {
    source: Source,
    ahead: VecDeque<Entry>,
    /// An error met while reading ahead, raised once what came before it
    /// has been yielded.
    error: Option<siftdb::Error>,
    ended: bool,
    batch: usize,
}

impl State {
    /// The next entry, reading a batch ahead when none is.
    fn next(&mut self) -> siftdb::Result<Option<Entry>> {
        // Every call after a close raises, not only the first.
        if matches!(self.source, Source::Closed) {
            return Err(siftdb::Error::Closed);
        }
        if self.ahead.is_empty() && !self.ended {
            while self.ahead.len() < self.batch {
                match self.source.next() {
                    Some(Ok(entry)) => self.ahead.push_back(entry),
                    Some(Err(error)) => {
                        self.error = Some(error);
                        self.ended = true;
                        break;
                    }
                    None => {
                        self.ended = true;
                        break;
                    }
                }
            }
            self.batch = (self.batch * 2).min(MAX_BATCH);
        }
        match self.ahead.pop_front() {
            Some(entry) => Ok(Some(entry)),
            None => self.error.take().map_or(Ok(None), Err),
        }
    }
}

/// The state, shared with the `close()` that may end it.
struct Shared(Mutex<State>);

impl Child for Shared {
    /// Drops the source, and what was read ahead: an iterator of a closed
    /// database yields nothing more, as its other objects.
    fn close(&self) {
        let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let source = std::mem::replace(&mut state.source, Source::Closed);
        state.ahead.clear();
        state.error = None;
        drop(state);
        drop(source);
    }
}

/// An iterator over entries (`(key, value)` pairs, keys or values), read
/// lazily in key order as of the moment it was made.
#[pyclass(module = "siftdb", name = "EntryIterator", frozen)]
pub struct Entries {
    state: Arc<Shared>,
    yields: Yields,
}

impl Entries {
    fn with(source: Source, yields: Yields) -> Self {
        Self {
            state: Arc::new(Shared(Mutex::new(State {
                source,
                ahead: VecDeque::new(),
                error: None,
                ended: false,
                batch: 8,
            }))),
            yields,
        }
    }

    /// A scan's entries.
    pub fn new(scan: Scan, yields: Yields) -> Self {
        Self::with(Source::Scan(scan), yields)
    }

    /// A search's results, `limit` at most.
    pub fn found(find: siftdb::Find, limit: Option<usize>) -> Self {
        Self::with(Source::Find { find, left: limit }, Yields::Items)
    }

    /// What its database's `close()` ends.
    pub fn child(&self) -> Arc<dyn Child> {
        self.state.clone()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[pymethods]
impl Entries {
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        // What was read ahead is taken with the GIL held; the lock is only
        // ever waited for without it (a thread that holds it may be
        // reading, and needs the GIL back to finish).
        let ready = match self.state.0.try_lock() {
            Ok(mut state) => state.ahead.pop_front(),
            Err(_) => None,
        };
        let entry = match ready {
            Some(entry) => entry,
            None => match py.detach(|| self.lock().next()).map_err(to_py)? {
                Some(entry) => entry,
                None => return Ok(None),
            },
        };
        let (key, value) = entry;
        Ok(Some(match self.yields {
            Yields::Items => PyTuple::new(py, [to_bytes(py, &key), to_bytes(py, &value)])?
                .into_any()
                .unbind(),
            Yields::Keys => to_bytes(py, &key).into_any().unbind(),
            Yields::Values => to_bytes(py, &value).into_any().unbind(),
        }))
    }

    /// What a search by value did so far, as a dict (`method`, the filters
    /// probed, the blocks read, ...); complete once it has been iterated to
    /// its end. `None` for a scan. `ClosedError` once its database closed.
    fn explain<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let stats = py.detach(|| match &self.lock().source {
            Source::Find { find, .. } => Ok(Some(*find.stats())),
            Source::Scan(_) => Ok(None),
            Source::Closed => Err(siftdb::Error::Closed),
        });
        stats
            .map_err(to_py)?
            .map(|stats| find_stats(py, &stats))
            .transpose()
    }
}
