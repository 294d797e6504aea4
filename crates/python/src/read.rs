//! What a `Db` and a `Snapshot` read alike: point lookups, ranges with a
//! prefix, and searches by value. One implementation serves both Python
//! classes.

use std::ops::Bound;

use pyo3::prelude::*;
use siftdb::{DbIter, Find, InMemory, Method};

use crate::errors::{invalid, to_py};
use crate::iter::{Entries, Yields};

/// The reads a database handle and a snapshot share.
pub trait Reader: Send + Sync {
    fn get(&self, key: &[u8]) -> siftdb::Result<Option<Vec<u8>>>;
    fn get_in_memory(&self, key: &[u8]) -> siftdb::Result<InMemory<Option<Vec<u8>>>>;
    fn range(&self, bounds: (Bound<Vec<u8>>, Bound<Vec<u8>>)) -> DbIter;
    fn prefix(&self, prefix: &[u8]) -> DbIter;
    fn find(&self, index: &str, value: &[u8], method: Option<Method>) -> siftdb::Result<Find>;
}

impl Reader for siftdb::Db {
    fn get(&self, key: &[u8]) -> siftdb::Result<Option<Vec<u8>>> {
        siftdb::Db::get(self, key)
    }
    fn get_in_memory(&self, key: &[u8]) -> siftdb::Result<InMemory<Option<Vec<u8>>>> {
        siftdb::Db::get_in_memory(self, key)
    }
    fn range(&self, bounds: (Bound<Vec<u8>>, Bound<Vec<u8>>)) -> DbIter {
        siftdb::Db::range(self, bounds)
    }
    fn prefix(&self, prefix: &[u8]) -> DbIter {
        siftdb::Db::prefix(self, prefix)
    }
    fn find(&self, index: &str, value: &[u8], method: Option<Method>) -> siftdb::Result<Find> {
        match method {
            None => siftdb::Db::find(self, index, value),
            Some(method) => siftdb::Db::find_with(self, index, value, method),
        }
    }
}

impl Reader for siftdb::Snapshot {
    fn get(&self, key: &[u8]) -> siftdb::Result<Option<Vec<u8>>> {
        siftdb::Snapshot::get(self, key)
    }
    fn get_in_memory(&self, key: &[u8]) -> siftdb::Result<InMemory<Option<Vec<u8>>>> {
        siftdb::Snapshot::get_in_memory(self, key)
    }
    fn range(&self, bounds: (Bound<Vec<u8>>, Bound<Vec<u8>>)) -> DbIter {
        siftdb::Snapshot::range(self, bounds)
    }
    fn prefix(&self, prefix: &[u8]) -> DbIter {
        siftdb::Snapshot::prefix(self, prefix)
    }
    fn find(&self, index: &str, value: &[u8], method: Option<Method>) -> siftdb::Result<Find> {
        match method {
            None => siftdb::Snapshot::find(self, index, value),
            Some(method) => siftdb::Snapshot::find_with(self, index, value, method),
        }
    }
}

/// Where a scan runs: `[start, stop)` within the keys that begin with
/// `prefix`, each part optional.
pub struct Span {
    pub start: Option<Vec<u8>>,
    pub stop: Option<Vec<u8>>,
    pub prefix: Option<Vec<u8>>,
    pub reverse: bool,
}

impl Span {
    /// The entries of the span, in key order (or reversed).
    pub fn scan(self, reader: &dyn Reader, yields: Yields) -> Entries {
        let iter = match (&self.prefix, &self.start, &self.stop) {
            // A prefix alone takes the prefix path: its filters apply.
            (Some(prefix), None, None) => reader.prefix(prefix),
            _ => reader.range(self.bounds()),
        };
        if self.reverse {
            Entries::new(Box::new(iter.rev()), yields)
        } else {
            Entries::new(Box::new(iter), yields)
        }
    }

    /// `[start, stop)` narrowed to the prefix's keys.
    pub fn bounds(&self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        let mut lower = self.start.clone();
        let mut upper = self.stop.clone();
        if let Some(prefix) = &self.prefix {
            if lower.as_ref().is_none_or(|start| start < prefix) {
                lower = Some(prefix.clone());
            }
            if let Some(end) = prefix_end(prefix)
                && upper.as_ref().is_none_or(|stop| *stop > end)
            {
                upper = Some(end);
            }
        }
        (
            lower.map_or(Bound::Unbounded, Bound::Included),
            upper.map_or(Bound::Unbounded, Bound::Excluded),
        )
    }
}

/// The first key past every key that begins with `prefix`; `None` when
/// there is none (the prefix is all `0xff`).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut end = prefix[..=last].to_vec();
    end[last] += 1;
    Some(end)
}

/// The method `name` asks for; `None` (the planner chooses) for `"auto"`.
pub fn method(name: Option<&str>) -> PyResult<Option<Method>> {
    Ok(match name {
        None | Some("auto") => None,
        Some("scan") => Some(Method::Scan),
        Some("bloom-scan") => Some(Method::BloomScan),
        Some("hierarchy") => Some(Method::Hierarchy),
        Some("flat") => Some(Method::Flat),
        Some(other) => {
            return Err(invalid(format!(
                "method {other:?}: expected auto, scan, bloom-scan, hierarchy or flat"
            )));
        }
    })
}

/// A search by value, `limit` results at most.
pub fn find(
    py: Python<'_>,
    reader: &dyn Reader,
    index: &str,
    value: &[u8],
    limit: Option<usize>,
    method_name: Option<&str>,
) -> PyResult<Entries> {
    let method = method(method_name)?;
    let found = py
        .detach(|| reader.find(index, value, method))
        .map_err(to_py)?;
    Ok(Entries::found(found, limit))
}
