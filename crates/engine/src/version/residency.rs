//! Which tables' metadata stays in memory, under a byte budget
//! (`DbBuilder::filter_memory_bytes`), piece by piece.
//!
//! A table's metadata is its properties and key filter directory (the
//! table itself, small), its index and its key-filter partitions (pieces,
//! `sstable::piece`), and its value filters (charged with the table). The
//! block cache holds the rest: the data blocks, and the prefix and range
//! filters, which only scans ask. A database opens knowing only what the
//! manifest says of each table (its key range, size and sequence numbers);
//! a table is read at its first use, and each piece at the first use that
//! needs it.
//!
//! What is read is kept resident while the budget allows. When a load
//! would go over it, residents (tables and pieces alike) are dropped, the
//! coldest first: the fewest reads saved per byte, so the budget keeps what
//! saves the most reads of metadata. Victims are the coldest of
//! [`SAMPLES`] residents drawn at random, as Redis evicts, so a load costs
//! the same however many are resident. Heat halves each time about as
//! many residents as there are have been evicted, so it follows where
//! lookups go now. Something colder than the sampled ones is read for the
//! one use and not kept (a *transient* load). Resident bytes never exceed
//! the budget; a reader still holding a dropped piece keeps it until it is
//! done, as with the block cache.
//!
//! The budget and the block cache hold different tables: a table evicted
//! from the budget goes to the block cache, and one promoted from the
//! cache into the budget leaves it, so that memory holds as many tables as
//! it can (a copy of a resident table in the cache would serve nothing).
//! Its pieces stay resident or not on their own; a piece whose table is no
//! longer held anywhere is the first evicted.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use arc_swap::ArcSwapOption;

use super::COUNTED_LEVELS;
use crate::error::Result;
use crate::rng::SplitMix64;
use crate::sstable::piece::{AnyPiece, COUNT_STEP, Heat, Keeper, PieceId, Resident, TABLE_PIECE};
use crate::sstable::{BlockCache, Table};

/// Residents sampled for victims per load that does not fit.
const SAMPLES: usize = 16;

thread_local! {
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
    /// Bytes the table takes in memory without its pieces (what the budget
    /// charges it).
    pub resident_bytes: u64,
    /// Bytes the table takes with all its pieces resident.
    pub metadata_bytes: u64,
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
            metadata_bytes: table.metadata_bytes(),
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
    heat: Heat,
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
            heat: Heat::default(),
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
}

/// What the budget holds: a table, or one of its pieces.
#[derive(Debug, Clone)]
enum Held {
    Table(Arc<Slot>),
    Piece(Arc<dyn Resident>),
}

impl Held {
    fn id(&self) -> PieceId {
        match self {
            Self::Table(slot) => PieceId {
                table: slot.id,
                piece: TABLE_PIECE,
            },
            Self::Piece(piece) => piece.id(),
        }
    }

    fn heat(&self) -> &Heat {
        match self {
            Self::Table(slot) => &slot.heat,
            Self::Piece(piece) => piece.heat(),
        }
    }

    /// A piece that nothing but the budget holds: its table was dropped
    /// (from the budget and from the block cache), so it serves nothing.
    fn is_orphan(&self) -> bool {
        match self {
            Self::Table(_) => false,
            Self::Piece(piece) => Arc::strong_count(piece) == 1,
        }
    }
}

/// One resident: what it is, its bytes, and its level.
#[derive(Debug)]
struct Entry {
    held: Held,
    bytes: u64,
    level: usize,
}

/// Loads, evictions and transient loads at one level since open.
#[derive(Debug, Default)]
struct LevelCounts {
    resident_bytes: AtomicU64,
    loads: AtomicU64,
    evictions: AtomicU64,
    transient: AtomicU64,
    cache_hits: AtomicU64,
    /// Filter partitions read for a probe because they were not resident,
    /// and how many of those probes ruled the key out: what reading one
    /// is worth at this level (see [`Keeper::worth_reading`]).
    partition_reads: AtomicU64,
    partition_negatives: AtomicU64,
}

/// Probes of partitions read at a level before their worth is judged.
const PARTITION_READS_TO_JUDGE: u64 = 32;

/// The probes of partitions read kept per level: past this the counts
/// halve, so that the estimate follows where lookups go now.
const PARTITION_READS_KEPT: u64 = 4096;

/// One probe in this many of a partition judged not worth reading reads
/// it anyway, so that the estimate learns when the lookups change.
const PARTITION_EXPLORE: u64 = 16;

thread_local! {
    /// Partitions this thread has not read, judged not worth it.
    static SKIPPED: Cell<u64> = const { Cell::new(0) };
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
    /// Bytes charged to the residents.
    used: u64,
    /// The clock of the decay: it advances once per [`State::resident`]'s
    /// length of evictions, so heat halves each time the resident set has
    /// turned over about once.
    round: u64,
    evictions_this_round: usize,
    /// Residents, in no order (sampled by index), and where each is (in
    /// the order of their ids, so that a table's pieces are found together).
    resident: Vec<Entry>,
    position: BTreeMap<PieceId, usize>,
    /// Picks the samples.
    rng: SplitMix64,
}

impl State {
    /// The position of a resident drawn at random.
    fn sample(&mut self) -> Option<usize> {
        let len = self.resident.len() as u64;
        (len > 0).then(|| self.rng.below(len) as usize)
    }

    fn insert(&mut self, entry: Entry) {
        self.position.insert(entry.held.id(), self.resident.len());
        self.resident.push(entry);
    }

    fn remove(&mut self, id: PieceId) -> Option<Entry> {
        let at = self.position.remove(&id)?;
        let entry = self.resident.swap_remove(at);
        if let Some(moved) = self.resident.get(at) {
            self.position.insert(moved.held.id(), at);
        }
        Some(entry)
    }

    /// The ids of table `table`'s residents, the table and its pieces.
    fn of_table(&self, table: u64) -> Vec<PieceId> {
        let first = PieceId { table, piece: 0 };
        let last = PieceId {
            table,
            piece: TABLE_PIECE,
        };
        self.position
            .range(first..=last)
            .map(|(id, _)| *id)
            .collect()
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
                position: BTreeMap::new(),
                rng: SplitMix64(0),
            }),
            levels: Default::default(),
        }
    }

    /// Bytes charged to residents now (never over the budget).
    pub(crate) fn used(&self) -> u64 {
        lock(&self.state).used
    }

    /// The budget.
    pub(crate) fn budget(&self) -> u64 {
        self.budget
    }

    /// The keeper of the pieces of a table at `level`.
    pub(crate) fn keeper(self: &Arc<Self>, level: u32) -> Arc<dyn Keeper> {
        Arc::new(LevelKeeper {
            residency: Arc::clone(self),
            level: (level as usize).min(COUNTED_LEVELS - 1),
        })
    }

    /// The uses of `slot`'s table, decayed as eviction decays them, left
    /// unfolded: what the filter of a table written from it is sized by.
    pub(crate) fn heat(&self, slot: &Slot) -> u64 {
        let round = lock(&self.state).round;
        slot.heat.decayed(round) + slot.heat.pending()
    }

    /// `slot`'s table for one use if it is resident. Counts the use.
    pub(crate) fn resident_for_use(&self, slot: &Slot) -> Option<ResidentGuard> {
        slot.heat.count_use();
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
        if slot.table.load().is_none() && self.make_room(&mut state, &slot.heat, bytes) {
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
    /// can be made to fit by evicting colder residents; whether it was kept.
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
        let kept = keep && self.make_room(&mut state, &slot.heat, bytes);
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
        let entry = Entry {
            held: Held::Table(Arc::clone(slot)),
            bytes,
            level: slot.level,
        };
        self.charge(state, entry);
    }

    /// Keeps `piece` of a table at `level`, whose `value` was just read
    /// from its file (`fresh`) or found in the block cache, if it can be
    /// made to fit by evicting colder residents: `install` makes it
    /// resident. A fresh value not kept is cached.
    fn keep_piece(
        &self,
        level: usize,
        piece: Arc<dyn Resident>,
        (value, fresh): (&AnyPiece, bool),
        bytes: u64,
        install: &mut dyn FnMut(),
    ) -> bool {
        let counts = &self.levels[level];
        if fresh {
            counts.loads.fetch_add(1, Ordering::Relaxed);
        }
        let mut state = lock(&self.state);
        let id = piece.id();
        if let Some(&at) = state.position.get(&id) {
            let same = matches!(&state.resident[at].held,
                Held::Piece(p) if std::ptr::addr_eq(Arc::as_ptr(p), Arc::as_ptr(&piece)));
            if same {
                // Another reader kept it meanwhile.
                return true;
            }
            // The piece of an earlier read of its table.
            self.evict(&mut state, id);
        }
        if !self.make_room(&mut state, piece.heat(), bytes) {
            drop(state);
            if fresh {
                counts.transient.fetch_add(1, Ordering::Relaxed);
                let value = Arc::clone(value);
                self.cache
                    .insert_piece(id.table, piece.offset(), value, bytes);
            }
            return false;
        }
        install();
        self.cache.forget_piece(id.table, piece.offset());
        let entry = Entry {
            held: Held::Piece(piece),
            bytes,
            level,
        };
        self.charge(&mut state, entry);
        true
    }

    fn charge(&self, state: &mut State, entry: Entry) {
        state.used += entry.bytes;
        self.levels[entry.level]
            .resident_bytes
            .fetch_add(entry.bytes, Ordering::Relaxed);
        state.insert(entry);
    }

    /// Evicts residents colder than `incoming` (of `heat`) until `bytes`
    /// more fit; `false` (evicting nothing) if they cannot. Victims are the
    /// coldest of a few sampled residents (as Redis evicts), so a load
    /// costs the same however many are resident; pieces whose table is
    /// gone go first.
    fn make_room(&self, state: &mut State, heat: &Heat, bytes: u64) -> bool {
        if bytes > self.budget {
            return false;
        }
        if state.used + bytes <= self.budget {
            return true;
        }
        let need = state.used + bytes - self.budget;
        let round = state.round;
        let incoming_heat = per_byte(heat.fold(round), bytes);
        let mut colder: Vec<(f64, u64, PieceId)> = Vec::new();
        for _ in 0..SAMPLES.min(state.resident.len() * 2) {
            let Some(at) = state.sample() else { break };
            let entry = &state.resident[at];
            let id = entry.held.id();
            let heat = if entry.held.is_orphan() {
                -1.0
            } else {
                per_byte(entry.held.heat().fold(round), entry.bytes)
            };
            if heat < incoming_heat && !colder.iter().any(|c| c.2 == id) {
                colder.push((heat, entry.bytes, id));
            }
        }
        colder.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut freed = 0;
        let victims: Vec<PieceId> = colder
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

    fn evict(&self, state: &mut State, id: PieceId) {
        if let Some(entry) = self.release(state, id) {
            match &entry.held {
                Held::Table(slot) => {
                    if let Some(table) = slot.table.swap(None) {
                        self.cache.insert_table(slot.id, table);
                    }
                }
                Held::Piece(piece) => {
                    // A piece nothing else holds serves no one in the cache.
                    if !entry.held.is_orphan()
                        && let Some(value) = piece.evict()
                    {
                        self.cache
                            .insert_piece(id.table, piece.offset(), value, entry.bytes);
                    }
                }
            }
            self.levels[entry.level]
                .evictions
                .fetch_add(1, Ordering::Relaxed);
            state.evictions_this_round += 1;
            if state.evictions_this_round >= state.resident.len().max(16) {
                state.round += 1;
                state.evictions_this_round = 0;
            }
        }
    }

    /// Drops table `id` and its pieces from the budget: it left the
    /// database.
    pub(crate) fn forget(&self, id: u64) {
        let mut state = lock(&self.state);
        for piece in state.of_table(id) {
            if let Some(entry) = self.release(&mut state, piece) {
                match &entry.held {
                    Held::Table(slot) => drop(slot.table.swap(None)),
                    Held::Piece(piece) => drop(piece.evict()),
                }
            }
        }
    }

    /// Takes `id` out of the budget; what it was, if it was resident. The
    /// caller drops it from memory.
    fn release(&self, state: &mut State, id: PieceId) -> Option<Entry> {
        let entry = state.remove(id)?;
        state.used -= entry.bytes;
        self.levels[entry.level]
            .resident_bytes
            .fetch_sub(entry.bytes, Ordering::Relaxed);
        Some(entry)
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

/// Keeps the pieces of the tables of one level in a [`Residency`].
#[derive(Debug)]
struct LevelKeeper {
    residency: Arc<Residency>,
    level: usize,
}

impl Keeper for LevelKeeper {
    fn keep(
        &self,
        piece: Arc<dyn Resident>,
        value: (&AnyPiece, bool),
        bytes: u64,
        install: &mut dyn FnMut(),
    ) -> bool {
        self.residency
            .keep_piece(self.level, piece, value, bytes, install)
    }

    /// A partition is worth reading when it rules out at least half the
    /// keys it is read for at this level: a key it rules out saves the
    /// index and the data block (one read or two), one it passes costs the
    /// partition's read on top of them. At the last level under lookups
    /// of present keys it passes nearly all, and lookups go straight to
    /// the index; at the levels above it rules out nearly all.
    fn worth_reading(&self) -> bool {
        let counts = &self.residency.levels[self.level];
        let reads = counts.partition_reads.load(Ordering::Relaxed);
        let negatives = counts.partition_negatives.load(Ordering::Relaxed);
        if reads < PARTITION_READS_TO_JUDGE || 2 * negatives >= reads {
            return true;
        }
        SKIPPED.with(|n| {
            n.set(n.get().wrapping_add(1));
            n.get() % PARTITION_EXPLORE == 0
        })
    }

    fn partition_read(&self, negative: bool) {
        let counts = &self.residency.levels[self.level];
        let reads = counts.partition_reads.fetch_add(1, Ordering::Relaxed) + 1;
        if negative {
            counts.partition_negatives.fetch_add(1, Ordering::Relaxed);
        }
        if reads >= PARTITION_READS_KEPT {
            // Racy halving: a count lost to a concurrent probe does not
            // matter to an estimate.
            let negatives = counts.partition_negatives.load(Ordering::Relaxed);
            counts.partition_reads.store(reads / 2, Ordering::Relaxed);
            counts
                .partition_negatives
                .store(negatives.min(reads) / 2, Ordering::Relaxed);
        }
    }

    fn cached(&self, table: u64, offset: u64) -> Option<AnyPiece> {
        let piece = self.residency.cache.piece(table, offset)?;
        self.residency.levels[self.level]
            .cache_hits
            .fetch_add(1, Ordering::Relaxed);
        Some(piece)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sstable::piece::Piece;

    const PIECE_BYTES: u64 = 1000;

    /// A residency with room for `pieces` pieces, its keeper of level 1,
    /// and its block cache.
    fn residency(pieces: u64) -> (Arc<Residency>, Arc<dyn Keeper>, Arc<BlockCache>) {
        let cache = Arc::new(BlockCache::new(1 << 20));
        let residency = Arc::new(Residency::new(pieces * PIECE_BYTES, Arc::clone(&cache)));
        let keeper = residency.keeper(1);
        (residency, keeper, cache)
    }

    /// `piece`'s value, read (counted `uses` times first) through `keeper`.
    fn use_piece(keeper: &dyn Keeper, piece: &Arc<Piece<u64>>, uses: u64) -> u64 {
        for _ in 0..uses * COUNT_STEP {
            piece.heat().count_use();
        }
        let value = piece.get_or_read(keeper, |_| PIECE_BYTES, || Ok::<_, ()>(piece.offset()));
        *value.unwrap()
    }

    #[test]
    fn pieces_stay_within_the_budget_and_the_hotter_stay() {
        let (residency, keeper, cache) = residency(3);
        let pieces: Vec<_> = (0..7)
            .map(|i| Piece::<u64>::new(7, i, 100 + u64::from(i)))
            .collect();
        for piece in &pieces[..3] {
            assert_eq!(use_piece(keeper.as_ref(), piece, 10), piece.offset());
        }
        assert_eq!(residency.used(), 3 * PIECE_BYTES);
        assert!(pieces[..3].iter().all(|p| p.resident().is_some()));
        // Colder pieces are read once and cached, not kept.
        for piece in &pieces[3..6] {
            use_piece(keeper.as_ref(), piece, 1);
            assert!(piece.resident().is_none());
            assert!(cache.piece(7, piece.offset()).is_some());
        }
        // A hotter one pushes out a resident one, which goes to the cache.
        use_piece(keeper.as_ref(), &pieces[6], 100);
        assert!(pieces[6].resident().is_some());
        assert!(
            cache.piece(7, pieces[6].offset()).is_none(),
            "kept and cached"
        );
        let evicted: Vec<_> = pieces[..3]
            .iter()
            .filter(|p| p.resident().is_none())
            .collect();
        assert_eq!(evicted.len(), 1);
        assert!(cache.piece(7, evicted[0].offset()).is_some());
        assert_eq!(residency.used(), 3 * PIECE_BYTES);
        assert_eq!(residency.level_figures(1).evictions, 1);
    }

    #[test]
    fn a_piece_whose_table_is_gone_goes_first_and_a_table_takes_its_pieces_with_it() {
        let (residency, keeper, cache) = residency(2);
        let hot = Piece::<u64>::new(1, 0, 10);
        use_piece(keeper.as_ref(), &hot, 1_000);
        let orphan = Piece::<u64>::new(2, 0, 20);
        use_piece(keeper.as_ref(), &orphan, 1_000);
        drop(orphan);
        // Colder than both, but the orphan serves no one: it makes room,
        // and is not cached.
        let cold = Piece::<u64>::new(3, 0, 30);
        use_piece(keeper.as_ref(), &cold, 1);
        assert!(cold.resident().is_some() && hot.resident().is_some());
        assert!(cache.piece(2, 20).is_none());
        residency.forget(1);
        assert!(hot.resident().is_none());
        assert_eq!(residency.used(), PIECE_BYTES);
        residency.forget(3);
        assert_eq!(residency.used(), 0);
        assert_eq!(residency.level_figures(1).resident_bytes, 0);
    }

    #[test]
    fn a_piece_too_large_for_the_budget_is_never_kept() {
        let (residency, keeper, _) = residency(0);
        let piece = Piece::<u64>::new(1, 0, 10);
        assert_eq!(use_piece(keeper.as_ref(), &piece, 1_000), 10);
        assert!(piece.resident().is_none());
        assert_eq!(residency.used(), 0);
        assert_eq!(residency.level_figures(1).transient_loads, 1);
    }
}
