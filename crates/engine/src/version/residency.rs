//! Which tables keep their metadata in memory, under a byte budget
//! (`DbBuilder::filter_memory_bytes`).
//!
//! A table's metadata is its index, its key and value filters and its
//! properties. The block cache holds the rest: the data blocks, and the
//! prefix and range filters, which only scans ask. A database opens knowing only what the manifest says
//! of each table (its key range, size and sequence numbers); a table's
//! metadata is read at its first use.
//!
//! What is read is kept resident while the budget allows. When a load
//! would go over it, resident tables are dropped, the coldest first: the
//! fewest uses per byte, so the budget keeps what saves the most reads of
//! metadata (each use of a table that is not resident reads it again).
//! Victims are the coldest of [`SAMPLES`] resident tables drawn at random,
//! as Redis evicts, so a load costs the same however many tables are
//! resident. Heat halves each time about as many tables as are resident
//! have been evicted, so it follows where lookups go now. A table colder
//! than the sampled ones is read for the one use and not kept (a
//! *transient* load). Resident bytes never exceed the budget; a reader
//! still holding a dropped table keeps it until it is done, as with the
//! block cache.
//!
//! The budget and the block cache hold different tables: a table evicted
//! from the budget goes to the block cache, and one promoted from the
//! cache into the budget leaves it, so that memory holds as many tables as
//! it can (a copy of a resident table in the cache would serve nothing).
//!
//! Uses are counted in steps of [`COUNT_STEP`] from a per-thread tally, so
//! that sixteen threads probing one hot table do not all write its line.

use std::cell::Cell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use arc_swap::ArcSwapOption;

use super::COUNTED_LEVELS;
use crate::error::Result;
use crate::rng::SplitMix64;
use crate::sstable::{BlockCache, Table};

/// Uses are added to a table's count this many at a time.
const COUNT_STEP: u64 = 8;

/// Resident tables sampled for victims per load that does not fit.
const SAMPLES: usize = 16;

thread_local! {
    /// Uses this thread has made of tables, modulo [`COUNT_STEP`].
    static TALLY: Cell<u64> = const { Cell::new(0) };
    /// Uses this thread has made of tables served by the block cache.
    static PROMOTIONS: Cell<u64> = const { Cell::new(0) };
}

/// A resident table held for one use.
pub(crate) struct ResidentGuard(arc_swap::Guard<Option<Arc<Table>>>);

impl ResidentGuard {
    /// The table as an `Arc` (its count is taken).
    pub(crate) fn into_arc(self) -> Option<Arc<Table>> {
        arc_swap::Guard::into_inner(self.0)
    }

    /// The table.
    pub(crate) fn table(&self) -> &Table {
        match self.0.as_deref() {
            Some(table) => table,
            // Built only from a guard holding a table.
            None => unreachable!("a resident guard holds a table"),
        }
    }
}

/// What stays known of a table once its metadata has been read, resident
/// or not: the figures `Db::stats` reports, and which value indexes it
/// has leaves for (the backfill asks of every table).
#[derive(Debug, Clone)]
pub(crate) struct Summary {
    /// Bytes the metadata takes in memory (what the budget charges).
    pub resident_bytes: u64,
    /// Data blocks.
    pub data_blocks: u64,
    /// Distinct user keys (what its key filter holds).
    pub distinct_keys: u64,
    /// Bytes of its key filter.
    pub filter_bytes: u64,
    /// Bytes of its prefix and range filters.
    pub scan_filter_bytes: u64,
    /// The key filter's kind.
    pub filter_kind: &'static str,
    /// The value indexes with a leaf in the table, readable or not.
    pub value_indexes: Box<[u64]>,
}

impl Summary {
    fn of(table: &Table) -> Self {
        let props = table.properties();
        Self {
            resident_bytes: table.resident_bytes(),
            data_blocks: props.data_blocks,
            distinct_keys: props.distinct_keys,
            filter_bytes: props.filter_bytes,
            scan_filter_bytes: props.scan_filters.map_or(0, |h| h.size),
            filter_kind: props.filter_kind.name(),
            value_indexes: props.value_filters.iter().map(|e| e.index_id).collect(),
        }
    }
}

/// One table's place in the budget, shared by its `LiveTable` and, while
/// it is resident, by the [`Residency`].
#[derive(Debug)]
pub(crate) struct Slot {
    id: u64,
    level: usize,
    path: PathBuf,
    table: ArcSwapOption<Table>,
    /// Uses since the last fold into `heat`.
    uses: AtomicU64,
    /// Decayed uses, and the eviction round they were last decayed at:
    /// changed only under the residency's lock.
    heat: AtomicU64,
    heat_round: AtomicU64,
    summary: OnceLock<Summary>,
}

impl Slot {
    /// The slot of table `id` at `level`, stored at `path`, with nothing
    /// read yet.
    pub(crate) fn new(id: u64, level: u32, path: PathBuf) -> Self {
        Self {
            id,
            level: (level as usize).min(COUNTED_LEVELS - 1),
            path,
            table: ArcSwapOption::empty(),
            uses: AtomicU64::new(0),
            heat: AtomicU64::new(0),
            heat_round: AtomicU64::new(0),
            summary: OnceLock::new(),
        }
    }

    /// The table file.
    pub(crate) fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The figures of the table, once its metadata has been read.
    pub(crate) fn summary(&self) -> Option<&Summary> {
        self.summary.get()
    }

    /// Counts one use, [`COUNT_STEP`] at a time per thread.
    fn count_use(&self) {
        let due = TALLY.with(|tally| {
            let n = tally.get().wrapping_add(1);
            tally.set(n);
            n % COUNT_STEP == 0
        });
        if due {
            self.uses.fetch_add(COUNT_STEP, Ordering::Relaxed);
        }
    }

    /// Folds the uses counted since the last fold into `heat`, halved once
    /// per eviction round since then. Called under the residency's lock.
    fn fold_heat(&self, round: u64) -> u64 {
        let decayed = self.decayed_heat(round);
        self.heat_round.store(round, Ordering::Relaxed);
        let heat = decayed + self.uses.swap(0, Ordering::Relaxed);
        self.heat.store(heat, Ordering::Relaxed);
        heat
    }

    /// `heat` as of eviction round `round`, halved once per round since it
    /// was last folded.
    fn decayed_heat(&self, round: u64) -> u64 {
        let since = round.saturating_sub(self.heat_round.load(Ordering::Relaxed));
        self.heat
            .load(Ordering::Relaxed)
            .checked_shr(since.min(63) as u32)
            .unwrap_or(0)
    }
}

/// Loads, evictions and transient loads at one level since open.
#[derive(Debug, Default)]
struct LevelCounts {
    resident_bytes: AtomicU64,
    loads: AtomicU64,
    evictions: AtomicU64,
    transient: AtomicU64,
    cache_hits: AtomicU64,
}

/// One level's figures, as [`Residency::level_figures`] reports them.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LevelFigures {
    pub resident_bytes: u64,
    pub loads: u64,
    pub evictions: u64,
    pub transient_loads: u64,
    pub cache_hits: u64,
}

/// The resident tables and the budget they share.
#[derive(Debug)]
pub(crate) struct Residency {
    budget: u64,
    /// Where evicted tables go.
    cache: Arc<BlockCache>,
    state: Mutex<State>,
    levels: [LevelCounts; COUNTED_LEVELS],
}

#[derive(Debug)]
struct State {
    /// Bytes charged to the resident tables.
    used: u64,
    /// The clock of the decay: it advances once per [`State::resident`]'s
    /// length of evictions, so heat halves each time the resident set has
    /// turned over about once.
    round: u64,
    evictions_this_round: usize,
    /// Resident tables, in no order (sampled by index), and where each is.
    resident: Vec<Arc<Slot>>,
    position: HashMap<u64, usize>,
    /// Picks the samples.
    rng: SplitMix64,
}

impl State {
    /// A resident table drawn at random.
    fn sample(&mut self) -> Option<&Arc<Slot>> {
        let len = self.resident.len() as u64;
        if len == 0 {
            return None;
        }
        self.resident.get(self.rng.below(len) as usize)
    }

    fn insert(&mut self, slot: &Arc<Slot>) {
        self.position.insert(slot.id, self.resident.len());
        self.resident.push(Arc::clone(slot));
    }

    fn remove(&mut self, id: u64) -> Option<Arc<Slot>> {
        let at = self.position.remove(&id)?;
        let slot = self.resident.swap_remove(at);
        if let Some(moved) = self.resident.get(at) {
            self.position.insert(moved.id, at);
        }
        Some(slot)
    }
}

impl Residency {
    /// Tables' metadata resident up to `budget` bytes; what is evicted
    /// goes to `cache`.
    pub(crate) fn new(budget: u64, cache: Arc<BlockCache>) -> Self {
        Self {
            budget,
            cache,
            state: Mutex::new(State {
                used: 0,
                round: 0,
                evictions_this_round: 0,
                resident: Vec::new(),
                position: HashMap::new(),
                rng: SplitMix64(0),
            }),
            levels: Default::default(),
        }
    }

    /// Bytes charged to resident tables now (never over the budget).
    pub(crate) fn used(&self) -> u64 {
        lock(&self.state).used
    }

    /// The budget.
    pub(crate) fn budget(&self) -> u64 {
        self.budget
    }

    /// The uses of `slot`'s table, decayed as eviction decays them, left
    /// unfolded: what the filter of a table written from it is sized by.
    pub(crate) fn heat(&self, slot: &Slot) -> u64 {
        let round = lock(&self.state).round;
        slot.decayed_heat(round) + slot.uses.load(Ordering::Relaxed)
    }

    /// `slot`'s table for one use if it is resident. Counts the use.
    pub(crate) fn resident_for_use(&self, slot: &Slot) -> Option<ResidentGuard> {
        slot.count_use();
        let guard = slot.table.load();
        guard.is_some().then_some(ResidentGuard(guard))
    }

    /// Counts a use served by the block cache, the table not resident.
    pub(crate) fn served_by_cache(&self, slot: &Slot) {
        self.levels[slot.level]
            .cache_hits
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Makes `table`, served from the block cache, resident if it is now
    /// hotter than what it would push out. Tried on one use in
    /// [`COUNT_STEP`] per thread, so that the lock is rarely taken.
    pub(crate) fn promote(&self, slot: &Arc<Slot>, table: &Arc<Table>) {
        let due = PROMOTIONS.with(|n| {
            n.set(n.get().wrapping_add(1));
            n.get() % COUNT_STEP == 0
        });
        let Some(bytes) = slot.summary().map(|s| s.resident_bytes) else {
            return;
        };
        if !due {
            return;
        }
        let mut state = lock(&self.state);
        if slot.table.load().is_none() && self.make_room(&mut state, slot, bytes) {
            self.admit(&mut state, slot, Arc::clone(table), bytes);
        }
    }

    /// The table if it is resident, counting no use.
    pub(crate) fn resident(&self, slot: &Slot) -> Option<Arc<Table>> {
        slot.table.load_full()
    }

    /// Makes `table`, just written, resident if it fits without evicting
    /// anything: a new table has no uses to weigh against the others'.
    pub(crate) fn offer(&self, slot: &Arc<Slot>, table: Arc<Table>) {
        let bytes = slot
            .summary
            .get_or_init(|| Summary::of(&table))
            .resident_bytes;
        let mut state = lock(&self.state);
        if state.used + bytes <= self.budget {
            self.admit(&mut state, slot, table, bytes);
        }
    }

    /// Reads `slot`'s table with `load`, and keeps it when `keep` and it
    /// can be made to fit by evicting colder tables; whether it was kept.
    pub(crate) fn read(
        &self,
        slot: &Arc<Slot>,
        load: impl FnOnce(&Slot) -> Result<Table>,
        keep: bool,
    ) -> Result<(Arc<Table>, bool)> {
        let table = Arc::new(load(slot)?);
        let counts = &self.levels[slot.level];
        counts.loads.fetch_add(1, Ordering::Relaxed);
        let bytes = slot
            .summary
            .get_or_init(|| Summary::of(&table))
            .resident_bytes;
        let mut state = lock(&self.state);
        if let Some(resident) = slot.table.load_full() {
            // Another reader loaded it meanwhile.
            return Ok((resident, true));
        }
        let kept = keep && self.make_room(&mut state, slot, bytes);
        if kept {
            self.admit(&mut state, slot, Arc::clone(&table), bytes);
        } else {
            counts.transient.fetch_add(1, Ordering::Relaxed);
        }
        Ok((table, kept))
    }

    fn admit(&self, state: &mut State, slot: &Arc<Slot>, table: Arc<Table>, bytes: u64) {
        self.cache.forget_metadata(slot.id);
        slot.table.store(Some(table));
        state.used += bytes;
        state.insert(slot);
        self.levels[slot.level]
            .resident_bytes
            .fetch_add(bytes, Ordering::Relaxed);
    }

    /// Evicts tables colder than `incoming` until `bytes` more fit; `false`
    /// (evicting nothing) if they cannot. Victims are the coldest of a few
    /// sampled tables (as Redis evicts), so a load costs the same however
    /// many tables are resident.
    fn make_room(&self, state: &mut State, incoming: &Slot, bytes: u64) -> bool {
        if bytes > self.budget {
            return false;
        }
        if state.used + bytes <= self.budget {
            return true;
        }
        let need = state.used + bytes - self.budget;
        let round = state.round;
        let incoming_heat = per_byte(incoming.fold_heat(round), bytes);
        let mut colder: Vec<(f64, u64, u64)> = Vec::new();
        for _ in 0..SAMPLES.min(state.resident.len() * 2) {
            let Some(slot) = state.sample() else { break };
            let size = slot.summary().map_or(0, |s| s.resident_bytes);
            let heat = per_byte(slot.fold_heat(round), size);
            if heat < incoming_heat && !colder.iter().any(|c| c.2 == slot.id) {
                colder.push((heat, size, slot.id));
            }
        }
        colder.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut freed = 0;
        let victims: Vec<u64> = colder
            .iter()
            .take_while(|(_, size, _)| {
                let more = freed < need;
                freed += size;
                more
            })
            .map(|(_, _, id)| *id)
            .collect();
        if freed < need {
            return false;
        }
        for id in victims {
            self.evict(state, id);
        }
        true
    }

    fn evict(&self, state: &mut State, id: u64) {
        if let Some((level, table)) = self.release(state, id) {
            if let Some(table) = table {
                self.cache.insert_table(id, table);
            }
            self.levels[level].evictions.fetch_add(1, Ordering::Relaxed);
            state.evictions_this_round += 1;
            if state.evictions_this_round >= state.resident.len().max(16) {
                state.round += 1;
                state.evictions_this_round = 0;
            }
        }
    }

    /// Drops table `id` from the budget: it left the database.
    pub(crate) fn forget(&self, id: u64) {
        self.release(&mut lock(&self.state), id);
    }

    /// Makes table `id` not resident; its level and table if it was.
    fn release(&self, state: &mut State, id: u64) -> Option<(usize, Option<Arc<Table>>)> {
        let slot = state.remove(id)?;
        let table = slot.table.swap(None);
        let bytes = slot.summary().map_or(0, |s| s.resident_bytes);
        state.used -= bytes;
        self.levels[slot.level]
            .resident_bytes
            .fetch_sub(bytes, Ordering::Relaxed);
        Some((slot.level, table))
    }

    /// The figures of `level` (deeper levels share the last).
    pub(crate) fn level_figures(&self, level: usize) -> LevelFigures {
        let counts = &self.levels[level.min(COUNTED_LEVELS - 1)];
        LevelFigures {
            resident_bytes: counts.resident_bytes.load(Ordering::Relaxed),
            loads: counts.loads.load(Ordering::Relaxed),
            evictions: counts.evictions.load(Ordering::Relaxed),
            transient_loads: counts.transient.load(Ordering::Relaxed),
            cache_hits: counts.cache_hits.load(Ordering::Relaxed),
        }
    }
}

/// Heat per byte: the uses a byte of budget saves reads for.
fn per_byte(heat: u64, bytes: u64) -> f64 {
    heat as f64 / bytes.max(1) as f64
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
