//! What `close()` ends. The engine keeps a database's lock and files for as
//! long as anything made from it lives: its snapshots, transactions and
//! iterators each hold the engine's shared state. Python frees those when
//! their last reference goes, which may be never, so `close()` must not wait
//! for that: every such object is registered with the `Db` (or `Snapshot`)
//! that made it, as a `Child`, and `close()` drops the engine object inside
//! each. Later calls on them raise `ClosedError`.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use arc_swap::ArcSwapOption;
use pyo3::prelude::*;

use crate::errors::ClosedError;

/// An object made from an open database that pins it.
pub trait Child: Send + Sync {
    /// Drops the engine object it holds; its later calls raise
    /// `ClosedError`. Called with the GIL released: it may wait for a
    /// call of another thread to finish with the object.
    fn close(&self);
}

/// The children of one `Db` or `Snapshot`, so that its `close()` ends them.
/// Holds them weakly: one Python no longer references is already gone.
#[derive(Default)]
pub struct Children {
    registry: Mutex<Registry>,
}

#[derive(Default)]
struct Registry {
    /// Set by `close_all`: a child made after that (by a call that started
    /// before the close) is refused, so none escapes it.
    closed: bool,
    children: Vec<Weak<dyn Child>>,
    /// Length at which the children already gone are dropped from the
    /// list: twice what was left the last time, so that pruning costs O(1)
    /// per child however many live.
    prune_at: usize,
}

/// The list is first pruned at this length.
const FIRST_PRUNE: usize = 64;

impl Children {
    /// Adds `child`, or closes it and raises `ClosedError` if `close_all`
    /// already ran (the child is new, so closing it waits for nothing).
    pub fn adopt(&self, child: Arc<dyn Child>) -> PyResult<()> {
        let mut registry = self.lock();
        if registry.closed {
            drop(registry);
            child.close();
            return Err(closed_error());
        }
        if registry.children.len() >= registry.prune_at.max(FIRST_PRUNE) {
            registry.children.retain(|child| child.strong_count() > 0);
            registry.prune_at = 2 * registry.children.len();
        }
        registry.children.push(Arc::downgrade(&child));
        Ok(())
    }

    /// Closes every child, and every one adopted from now on. Call it with
    /// the GIL released (see `Child::close`).
    pub fn close_all(&self) {
        let children = {
            let mut registry = self.lock();
            registry.closed = true;
            std::mem::take(&mut registry.children)
        };
        for child in children.iter().filter_map(Weak::upgrade) {
            child.close();
        }
    }

    /// The registry's lock is only held to push or take, never across a
    /// wait, so it is taken with the GIL held or not alike.
    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Child for Children {
    fn close(&self) {
        self.close_all();
    }
}

/// An engine object that `close()` empties: a database handle or a
/// snapshot, loaded by each call.
pub struct Slot<T> {
    object: ArcSwapOption<T>,
    /// What a call on it raises once it is empty.
    closed: &'static str,
}

impl<T> Slot<T> {
    pub fn new(object: T, closed: &'static str) -> Self {
        Self {
            object: ArcSwapOption::from_pointee(object),
            closed,
        }
    }

    /// The object, or `ClosedError`. A call holds it until it returns (a
    /// `close()` meanwhile ends it after that call).
    pub fn load(&self) -> PyResult<Open<T>> {
        let guard = self.object.load();
        if guard.is_none() {
            return Err(ClosedError::new_err(self.closed));
        }
        Ok(Open(guard))
    }

    /// Whether it was emptied.
    pub fn is_closed(&self) -> bool {
        self.object.load().is_none()
    }

    /// Empties it; returns the object (to be dropped with the GIL released:
    /// dropping a database joins its threads).
    pub fn take(&self) -> Option<Arc<T>> {
        self.object.swap(None)
    }
}

/// An open object, borrowed for one call without touching the `Arc`'s
/// count (which every thread's calls would contend on).
pub struct Open<T>(arc_swap::Guard<Option<Arc<T>>>);

impl<T> std::ops::Deref for Open<T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.0
            .as_deref()
            .unwrap_or_else(|| unreachable!("`Slot::load` makes an `Open` only of an object"))
    }
}

/// The `ClosedError` of an object whose database was closed.
pub fn closed_error() -> PyErr {
    ClosedError::new_err("the database is closed")
}
