//! Pieces of a table's metadata that are read, kept and dropped on their
//! own: the index and each key-filter partition.
//!
//! A lookup needs one filter partition and the index, not all of a
//! table's metadata: under a budget smaller than the metadata, a table
//! whose pieces are not all resident costs the reads of the pieces its
//! lookups touch (a 4 KiB partition, about a microsecond from the page
//! cache), not a reload of everything it stores. Which pieces stay is the
//! [`Keeper`]'s decision (the database's budget, `version::residency`);
//! a table read outside a database keeps every piece it reads.
//!
//! Each piece counts the reads it saves (its [`Heat`]): the index one per
//! use, a filter partition one per key it rules out, so that a filter
//! whose lookups are for keys it holds (the last level's, under present-key
//! lookups) saves nothing and is the first to go.

use std::cell::Cell;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwapOption;

pub(crate) use super::cache::AnyPiece;

/// Uses are added to a heat count this many at a time.
pub(crate) const COUNT_STEP: u64 = 8;

thread_local! {
    /// Uses this thread has counted, modulo [`COUNT_STEP`].
    static TALLY: Cell<u64> = const { Cell::new(0) };
}

/// Reads saved by something resident, decayed over time. Uses are counted
/// [`COUNT_STEP`] at a time from a per-thread tally, so that sixteen
/// threads using one hot piece do not all write its line.
#[derive(Debug, Default)]
pub(crate) struct Heat {
    /// Uses since the last fold into `heat`.
    uses: AtomicU64,
    /// Decayed uses, and the eviction round they were last decayed at:
    /// changed only under the keeper's lock.
    heat: AtomicU64,
    round: AtomicU64,
}

impl Heat {
    /// Counts one use, [`COUNT_STEP`] at a time per thread.
    pub(crate) fn count_use(&self) {
        let due = TALLY.with(|tally| {
            let n = tally.get().wrapping_add(1);
            tally.set(n);
            n % COUNT_STEP == 0
        });
        if due {
            self.uses.fetch_add(COUNT_STEP, Ordering::Relaxed);
        }
    }

    /// Folds the uses counted since the last fold into the heat, halved
    /// once per round since then. Called under the keeper's lock.
    pub(crate) fn fold(&self, round: u64) -> u64 {
        let decayed = self.decayed(round);
        self.round.store(round, Ordering::Relaxed);
        let heat = decayed + self.uses.swap(0, Ordering::Relaxed);
        self.heat.store(heat, Ordering::Relaxed);
        heat
    }

    /// The heat as of `round`, halved once per round since it was last
    /// folded, without the uses not folded yet.
    pub(crate) fn decayed(&self, round: u64) -> u64 {
        let since = round.saturating_sub(self.round.load(Ordering::Relaxed));
        self.heat
            .load(Ordering::Relaxed)
            .checked_shr(since.min(63) as u32)
            .unwrap_or(0)
    }

    /// Uses counted since the last fold.
    pub(crate) fn pending(&self) -> u64 {
        self.uses.load(Ordering::Relaxed)
    }
}

/// Which piece: its table, and its number within the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct PieceId {
    pub table: u64,
    pub piece: u32,
}

/// The number of a table's index among its pieces; filter partitions are
/// numbered from 0.
pub(crate) const INDEX_PIECE: u32 = u32::MAX - 1;

/// The number a budget gives the table itself, beside its pieces.
pub(crate) const TABLE_PIECE: u32 = u32::MAX;

/// Something a [`Keeper`] holds in memory and may drop.
pub(crate) trait Resident: Send + Sync + fmt::Debug {
    /// Which one it is.
    fn id(&self) -> PieceId;
    /// Where its block is in the table file (its key in the block cache).
    fn offset(&self) -> u64;
    /// The reads it saves.
    fn heat(&self) -> &Heat;
    /// Drops it from memory (readers holding it keep their copy); its
    /// value, for the block cache.
    fn evict(&self) -> Option<AnyPiece>;
}

/// Decides which pieces stay in memory.
pub(crate) trait Keeper: Send + Sync + fmt::Debug {
    /// `piece`, whose `value` was just read from its file (`fresh`) or
    /// found in the block cache, `bytes` large in memory: calls `install`
    /// (under the keeper's lock, so that accounting and residency agree)
    /// if it is to stay resident, else caches a fresh value; whether it
    /// stays.
    fn keep(
        &self,
        piece: Arc<dyn Resident>,
        value: (&AnyPiece, bool),
        bytes: u64,
        install: &mut dyn FnMut(),
    ) -> bool;

    /// The value of table `table`'s piece stored at `offset` if the block
    /// cache holds it (the budget evicted it there).
    fn cached(&self, table: u64, offset: u64) -> Option<AnyPiece>;

    /// Whether a key-filter partition that is not in memory is worth
    /// reading for one probe, or the lookup should go on as if it passed.
    fn worth_reading(&self) -> bool;

    /// A partition that was not in memory was probed: whether it ruled
    /// the key out.
    fn partition_read(&self, negative: bool);
}

/// The keeper of a table read outside a database (`sift dump-sst`,
/// `verify`): every piece read stays.
#[derive(Debug)]
pub(crate) struct KeepAll;

impl Keeper for KeepAll {
    fn keep(
        &self,
        _: Arc<dyn Resident>,
        _: (&AnyPiece, bool),
        _: u64,
        install: &mut dyn FnMut(),
    ) -> bool {
        install();
        true
    }

    fn cached(&self, _: u64, _: u64) -> Option<AnyPiece> {
        None
    }

    fn worth_reading(&self) -> bool {
        true
    }

    fn partition_read(&self, _: bool) {}
}

thread_local! {
    /// Uses this thread has made of pieces served by the block cache.
    static PROMOTIONS: Cell<u64> = const { Cell::new(0) };
}

/// A piece, resident or not.
pub(crate) struct Piece<T> {
    id: PieceId,
    /// Where its block is in the table file (its key in the block cache).
    offset: u64,
    value: ArcSwapOption<T>,
    heat: Heat,
}

impl<T> fmt::Debug for Piece<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Piece")
            .field("id", &self.id)
            .field("resident", &self.value.load().is_some())
            .finish()
    }
}

/// A piece in use: resident (held without touching its reference count,
/// which every reader of a hot piece would otherwise write), or read for
/// this use.
pub(crate) enum PieceRef<T> {
    Resident(arc_swap::Guard<Option<Arc<T>>>),
    Read(Arc<T>),
}

impl<T> std::ops::Deref for PieceRef<T> {
    type Target = T;

    fn deref(&self) -> &T {
        match self {
            Self::Resident(guard) => match guard.as_deref() {
                Some(value) => value,
                // Built only from a guard holding a value.
                None => unreachable!("a resident piece holds its value"),
            },
            Self::Read(value) => value,
        }
    }
}

impl<T> PieceRef<T> {
    /// The piece as an `Arc` (its count is taken).
    pub(crate) fn into_arc(self) -> Arc<T> {
        match self {
            Self::Resident(guard) => match arc_swap::Guard::into_inner(guard) {
                Some(value) => value,
                None => unreachable!("a resident piece holds its value"),
            },
            Self::Read(value) => value,
        }
    }
}

impl<T: Send + Sync + 'static> Piece<T> {
    /// Piece `piece` of table `table`, stored at `offset`, nothing read yet.
    pub(crate) fn new(table: u64, piece: u32, offset: u64) -> Arc<Self> {
        Arc::new(Self {
            id: PieceId { table, piece },
            offset,
            value: ArcSwapOption::empty(),
            heat: Heat::default(),
        })
    }

    /// The piece if it is resident.
    pub(crate) fn resident(&self) -> Option<PieceRef<T>> {
        let guard = self.value.load();
        guard.is_some().then_some(PieceRef::Resident(guard))
    }

    /// The piece, from the block cache or read with `read` (with the
    /// bytes it takes) if it is not resident, and offered to `keeper`,
    /// which keeps it if it saves more reads than what it would push out.
    /// A piece served by the cache is offered on one use in
    /// [`COUNT_STEP`] per thread, so that the keeper's lock is rarely
    /// taken.
    pub(crate) fn get_or_read<E>(
        self: &Arc<Self>,
        keeper: &dyn Keeper,
        bytes_of: impl FnOnce(&T) -> u64,
        read: impl FnOnce() -> Result<T, E>,
    ) -> Result<PieceRef<T>, E> {
        if let Some(resident) = self.resident() {
            return Ok(resident);
        }
        let cached = keeper
            .cached(self.id.table, self.offset)
            .and_then(|any| any.downcast::<T>().ok());
        let (value, fresh) = match cached {
            Some(value) => {
                let due = PROMOTIONS.with(|n| {
                    n.set(n.get().wrapping_add(1));
                    n.get() % COUNT_STEP == 0
                });
                if !due {
                    return Ok(PieceRef::Read(value));
                }
                (value, false)
            }
            None => (Arc::new(read()?), true),
        };
        let bytes = bytes_of(&value);
        let mut install = || self.value.store(Some(Arc::clone(&value)));
        let piece = Arc::clone(self) as Arc<dyn Resident>;
        let any = Arc::clone(&value) as AnyPiece;
        keeper.keep(piece, (&any, fresh), bytes, &mut install);
        Ok(PieceRef::Read(value))
    }

    /// The reads the piece saves.
    pub(crate) fn heat(&self) -> &Heat {
        &self.heat
    }
}

impl<T: Send + Sync + 'static> Resident for Piece<T> {
    fn id(&self) -> PieceId {
        self.id
    }

    fn offset(&self) -> u64 {
        self.offset
    }

    fn heat(&self) -> &Heat {
        &self.heat
    }

    fn evict(&self) -> Option<AnyPiece> {
        Some(self.value.swap(None)? as AnyPiece)
    }
}
