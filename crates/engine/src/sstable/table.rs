//! [`Table`]: an open table: its properties and the directory of its key
//! filter in memory, its index and filter partitions read as pieces at
//! first use (`piece`).

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use sift_filter::{Filter, KeyHash, StaticFilter};

use super::block::Block;
use super::cache::BlockCache;
use super::filters::key::{FilterLayout, KeyFilter, Probe};
use super::filters::scan::{ScanFilters, ScanProbe, common_prefix};
use super::filters::value::{BlockFilters, ValueFilters, ValueLeaf};
use super::footer::{FOOTER_LEN, Footer};
use super::index::Index;
use super::iter::{SharedBounds, TableIter};
use super::open_files::OpenFiles;
use super::piece::{KeepAll, Keeper, Piece, PieceRef};
use super::properties::Properties;
use super::table_index::{IndexPart, PartAt, TableIndex};
use super::trailer::{BlockHandle, read_block};
use crate::error::{Error, Result};
use crate::fs::{FileSystem, ReadableFile};
use crate::iter::UserBounds;
use crate::key::{Entry, InternalKey, MAX_SEQNO, ParsedKey, SeqNo, TRAILER_LEN, ValueKind};
use crate::read_tier::{Files, ReadTier};

/// Search keys up to this long are built on the stack, so that a lookup
/// allocates nothing but the value it returns.
const STACK_KEY: usize = 256;

/// Where a table's data blocks are read from.
#[derive(Debug)]
enum Source {
    /// A file held open for the table's life (a table read outside a
    /// database, by `sift dump-sst` or `verify`).
    Held(Arc<dyn ReadableFile>),
    /// The database's open files, which open it on demand.
    Shared(Arc<OpenFiles>),
}

/// An open table: its properties and key filter (or the directory of its
/// partitions) in memory, its index and filter partitions read at first
/// use and kept while `keeper` keeps them, its other filters read at
/// first use, data blocks read through the cache.
#[derive(Debug)]
pub(crate) struct Table {
    source: Source,
    path: PathBuf,
    id: u64,
    cache: Arc<BlockCache>,
    /// Decides which of the index and the filter partitions stay resident.
    keeper: Arc<dyn Keeper>,
    /// Read at its first use, whole or by partition: a lookup that the key
    /// filter answers never needs it. Each part is checked against the
    /// properties when decoded.
    index: TableIndex,
    /// The value index leaves and block filters, decoded at their first
    /// use (as the index: point lookups never ask them).
    values: OnceLock<ValueFilters>,
    filter: KeyFilter,
    /// Format version from the footer.
    version: u32,
    properties: Properties,
    /// Where the properties block is (for reports about it).
    properties_offset: u64,
}

impl Table {
    /// Opens `path`, reading and checking footer, index, filters and
    /// properties. Damage outside the filters is [`Error::Corruption`]
    /// naming `path` and the offset; a damaged key filter only makes every
    /// probe answer "may contain", a damaged value filter makes its leaf
    /// [`ValueLeaf::Unreadable`].
    pub(crate) fn open(
        fs: &dyn FileSystem,
        path: PathBuf,
        id: u64,
        cache: Arc<BlockCache>,
    ) -> Result<Self> {
        let file = fs.open(&path).map_err(|e| Error::io(&path, e))?;
        let source = Source::Held(Arc::clone(&file));
        Self::load(&file, source, path, (id, cache, Arc::new(KeepAll)))
    }

    /// [`Table::open`] for a table of a database: its file is opened through
    /// `files`, which may close it between reads of data blocks, and
    /// `keeper` keeps its pieces under the database's budget.
    pub(crate) fn open_shared(
        files: &Arc<OpenFiles>,
        path: PathBuf,
        id: u64,
        cache: Arc<BlockCache>,
        keeper: Arc<dyn Keeper>,
    ) -> Result<Self> {
        let file = files.get(id, &path).map_err(|e| Error::io(&path, e))?;
        let source = Source::Shared(Arc::clone(files));
        Self::load(&file, source, path, (id, cache, keeper))
    }

    /// Reads and checks the table's metadata from `file`.
    fn load(
        file: &Arc<dyn ReadableFile>,
        source: Source,
        path: PathBuf,
        (id, cache, keeper): (u64, Arc<BlockCache>, Arc<dyn Keeper>),
    ) -> Result<Self> {
        let size = file.size().map_err(|e| Error::io(&path, e))?;
        let limit = size.checked_sub(FOOTER_LEN as u64).ok_or_else(|| {
            Error::corruption(
                &path,
                0,
                format!("{size} bytes: too short for a table footer"),
            )
        })?;
        let mut footer_bytes = [0; FOOTER_LEN];
        file.read_exact_at(&mut footer_bytes, limit)
            .map_err(|e| Error::io(&path, e))?;
        let footer = Footer::decode(&footer_bytes).map_err(|c| c.in_file(&path, limit))?;

        let raw = read_block(file.as_ref(), &path, footer.properties, limit)?;
        let mut properties = Properties::decode(&raw, footer.version)
            .map_err(|c| c.in_file(&path, footer.properties.offset))?;
        properties.file_size = size;

        // Data blocks come first, back to back, and end where the metadata
        // blocks begin.
        let data_end = properties.stored_data_bytes;
        let mut meta_start = footer.index.offset.min(footer.properties.offset);
        if footer.filter_layout != FilterLayout::None {
            meta_start = meta_start.min(footer.filter.offset);
        }
        if data_end > meta_start {
            return Err(Error::corruption(
                &path,
                footer.properties.offset,
                format!("data ends at {data_end}, after the metadata at {meta_start}"),
            ));
        }

        let filter = KeyFilter::load(
            file.as_ref(),
            &path,
            (footer.filter_layout, footer.filter),
            limit,
            id,
            properties.largest_user_key(),
        )?;
        let index = TableIndex::open(file.as_ref(), &path, (id, &footer, limit), &properties)?;
        Ok(Self {
            source,
            path,
            id,
            cache,
            keeper,
            index,
            values: OnceLock::new(),
            filter,
            version: footer.version,
            properties,
            properties_offset: footer.properties.offset,
        })
    }

    /// `false` only if the table certainly holds no version of `user_key`.
    /// Uses `hash` (the key's `KeyHash`) as given: never re-hashes.
    pub(crate) fn may_contain(&self, user_key: &[u8], hash: KeyHash) -> bool {
        if user_key < self.properties.smallest_user_key()
            || user_key > self.properties.largest_user_key()
        {
            return false;
        }
        self.may_contain_in_range(Files, user_key, hash)
    }

    /// [`Table::may_contain`] for a key the caller already knows to lie
    /// within the table's key range (a run's `table_for` found it there):
    /// only the filter is asked, its partition read if it is not resident
    /// and `tier` allows (if not, or if it cannot be read, the table may
    /// hold the key).
    pub(crate) fn may_contain_in_range<T: ReadTier>(
        &self,
        tier: T,
        user_key: &[u8],
        hash: KeyHash,
    ) -> bool {
        if self.properties.entries == 0 {
            return false;
        }
        let (piece, handle) = match self.filter.locate(user_key, hash) {
            Probe::Answer(answer) => return answer,
            Probe::Partition { piece, handle } => (piece, handle),
        };
        let Some((filter, read)) = self.partition(tier, piece, handle) else {
            return true;
        };
        let may_contain = filter.may_contain(hash);
        if read {
            self.keeper.partition_read(!may_contain);
        }
        if !may_contain {
            // What a partition saves: the reads of the keys it rules out.
            piece.heat().count_use();
        }
        may_contain
    }

    /// The filter partition `piece`, stored at `handle`, and whether it was
    /// read for this probe: resident, cached, or read now if `tier` allows
    /// and its keeper finds it worth reading; `None` if not, or if it
    /// cannot be read.
    fn partition<T: ReadTier>(
        &self,
        tier: T,
        piece: &Arc<Piece<StaticFilter>>,
        handle: BlockHandle,
    ) -> Option<(PieceRef<StaticFilter>, bool)> {
        if let Some(filter) = piece.resident() {
            return Some((filter, false));
        }
        if tier.may_read_file().is_err() || !self.keeper.worth_reading() {
            return None;
        }
        let read = || {
            let file = self.file().map_err(drop)?;
            let limit = self.metadata_limit();
            let read = self
                .filter
                .read_partition(file.as_ref(), &self.path, handle, limit);
            read.ok_or(())
        };
        let keeper = self.keeper.as_ref();
        let filter = piece.get_or_read(keeper, KeyFilter::partition_bytes, read);
        filter.ok().map(|filter| (filter, true))
    }

    /// `Some(false)` only if the table holds no key within `bounds` (which
    /// overlap its key range); `None` when none of its scan filters applies
    /// to the scan of `probe`.
    pub(crate) fn may_hold(&self, probe: &ScanProbe, bounds: &UserBounds) -> Option<bool> {
        if self.properties.entries == 0 {
            return Some(false);
        }
        if probe.prefix.is_none() && !probe.ranged {
            // No filter applies: not worth reading them.
            return None;
        }
        self.scan_filters().may_hold(
            probe,
            bounds,
            self.properties.smallest_user_key(),
            self.properties.largest_user_key(),
        )
    }

    /// `Some(false)` only if the table's range filter shows it holds no
    /// key within `(lower, upper)` (which overlap its key range); `None`
    /// without a range filter.
    pub(crate) fn range_may_hold(&self, lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> Option<bool> {
        if self.properties.entries == 0 {
            return Some(false);
        }
        self.scan_filters().range_may_hold(
            lower,
            upper,
            self.properties.smallest_user_key(),
            self.properties.largest_user_key(),
        )
    }

    /// Bytes the table takes in memory without its pieces (the index or
    /// its partitions, the filter partitions, charged on their own): the
    /// properties, the key filter or its partitions' directory, the index's
    /// top level, and the value filters (read at their first use, charged
    /// from the start).
    pub(crate) fn resident_bytes(&self) -> u64 {
        let props = &self.properties;
        let values: u64 = props
            .value_filters
            .iter()
            .map(|entry| entry.handle.size + entry.blocks.map_or(0, |h| h.size))
            .sum();
        let keys = (props.smallest.len() + props.largest.len()) as u64;
        let own = std::mem::size_of::<Self>() as u64;
        own + keys + values + self.filter.summary_bytes() + self.index.summary_bytes()
    }

    /// Bytes the table takes in memory with all its pieces resident.
    pub(crate) fn metadata_bytes(&self) -> u64 {
        let index: u64 = (0..self.index.parts())
            .filter_map(|part| self.index.part(part))
            .map(|at| self.index_part_bytes(at.handle))
            .sum();
        self.resident_bytes() + index + self.filter.partitions_bytes()
    }

    /// Bytes a part of the index stored at `handle` takes in memory once
    /// read: as stored, plus what an older format (whose index is whole)
    /// keeps per block to search the stored bytes.
    fn index_part_bytes(&self, handle: BlockHandle) -> u64 {
        let entries = self.properties.data_blocks * super::index::bytes_per_block(self.version);
        handle.size + entries + std::mem::size_of::<Index>() as u64
    }

    /// The prefix and range filters, through the block cache: only scans
    /// ask them, so they are neither read with the table nor charged to
    /// the budget of resident metadata. Filters that cannot be read for an
    /// I/O error rule nothing out this time, and are read again next time.
    pub(crate) fn scan_filters(&self) -> Arc<ScanFilters> {
        let handle = self.properties.scan_filters;
        let common = common_prefix(
            self.properties.smallest_user_key(),
            self.properties.largest_user_key(),
        );
        let load = || {
            let file = self.file()?;
            let limit = self.metadata_limit();
            let filters = ScanFilters::load(file.as_ref(), &self.path, handle, limit, common)?;
            Ok((filters, handle.map_or(0, |h| h.size)))
        };
        self.cache
            .scan_filters(self.id, load)
            .unwrap_or_else(|_| Arc::new(ScanFilters::none()))
    }

    /// The value filters, read now if this is their first use. Filters
    /// that cannot be read for an I/O error are missing this time (a
    /// search reads the table whole, and meets the error there if it
    /// lasts), and are read again next time.
    pub(crate) fn value_filters(&self) -> &ValueFilters {
        static UNREAD: ValueFilters = ValueFilters::none();
        if let Some(filters) = self.values.get() {
            return filters;
        }
        let read = self.file().and_then(|file| {
            ValueFilters::load(
                file.as_ref(),
                &self.path,
                &self.properties.value_filters,
                self.properties.data_blocks,
                self.metadata_limit(),
            )
        });
        match read {
            Ok(filters) => self.values.get_or_init(|| filters),
            Err(_) => &UNREAD,
        }
    }

    /// Where the blocks end: the footer's offset.
    fn metadata_limit(&self) -> u64 {
        self.properties.file_size.saturating_sub(FOOTER_LEN as u64)
    }

    /// The table's file, opened if the database's open files closed it.
    fn file(&self) -> Result<Arc<dyn ReadableFile>> {
        match &self.source {
            Source::Held(file) => Ok(Arc::clone(file)),
            Source::Shared(files) => files
                .get(self.id, &self.path)
                .map_err(|e| Error::io(&self.path, e)),
        }
    }

    /// Starts loading what [`Table::may_contain_in_range`] will read, if it
    /// is in memory.
    pub(crate) fn prefetch_filter(&self, user_key: &[u8], hash: KeyHash) {
        self.filter.prefetch(user_key, hash);
    }

    /// Newest version of `user_key` at or below `seq` (tombstones
    /// included); adds data blocks read to `blocks_read`.
    #[cfg_attr(not(test), expect(dead_code, reason = "the read path uses `lookup`"))]
    pub(crate) fn get(
        &self,
        user_key: &[u8],
        seq: SeqNo,
        blocks_read: &mut u64,
    ) -> Result<Option<Entry>> {
        let mut key = Vec::new();
        Ok(self
            .lookup(Files, user_key, seq, blocks_read, &mut key)?
            .map(|(kind, value)| {
                let seq = ParsedKey::parse(&key).map_or(0, |p| p.seq);
                key.truncate(user_key.len());
                Entry {
                    key: InternalKey {
                        user_key: key,
                        seq,
                        kind,
                    },
                    value,
                }
            }))
    }

    /// [`Table::get`] without building the entry, reading within `tier`:
    /// the kind and value of the version found. `key` is scratch space
    /// (its encoded internal key is left there), reused across the tables
    /// of one lookup.
    pub(crate) fn lookup<T: ReadTier>(
        &self,
        tier: T,
        user_key: &[u8],
        seq: SeqNo,
        blocks_read: &mut u64,
        key: &mut Vec<u8>,
    ) -> Result<Option<(ValueKind, Vec<u8>)>, T::Error> {
        self.lookup_reusing(tier, user_key, seq, &mut None, blocks_read, key)
    }

    /// [`Table::lookup`] that reads no block twice in a row: `last` holds
    /// the block the previous lookup in this table read (if any), is used
    /// when `user_key` falls in the same block, and is left holding the
    /// block this lookup read. A batch of sorted keys reads each block once.
    pub(crate) fn lookup_reusing<T: ReadTier>(
        &self,
        tier: T,
        user_key: &[u8],
        seq: SeqNo,
        last: &mut Option<(usize, Arc<Block>)>,
        blocks_read: &mut u64,
        key: &mut Vec<u8>,
    ) -> Result<Option<(ValueKind, Vec<u8>)>, T::Error> {
        let len = user_key.len() + TRAILER_LEN;
        let trailer = (seq.min(MAX_SEQNO) << 8 | ValueKind::MAX as u64).to_le_bytes();
        let mut stack = [0u8; STACK_KEY];
        let heap;
        let search: &[u8] = match stack.get_mut(..len) {
            Some(buf) => {
                let (user, tail) = buf.split_at_mut(user_key.len());
                user.copy_from_slice(user_key);
                tail.copy_from_slice(&trailer);
                buf
            }
            None => {
                heap = [user_key, &trailer].concat();
                &heap
            }
        };
        let Some((at, part)) = self.find_block(tier, search)? else {
            return Ok(None);
        };
        let block = match last.take() {
            Some((cached, block)) if cached == at => block,
            _ => {
                let block = self.data_block_at(&part, tier, at)?;
                *blocks_read += 1;
                block
            }
        };
        let found = self.seek_in(&block, at, search, user_key, key);
        *last = Some((at, block));
        Ok(found?)
    }

    /// The newest version of `user_key` in data block `at`, found by
    /// seeking `search` (its internal key at the reader's sequence number).
    fn seek_in(
        &self,
        block: &Block,
        at: usize,
        search: &[u8],
        user_key: &[u8],
        key: &mut Vec<u8>,
    ) -> Result<Option<(ValueKind, Vec<u8>)>> {
        let found = block
            .seek(search, key)
            .map_err(|c| c.in_file(&self.path, self.block_offset(at)))?;
        let Some(value) = found else { return Ok(None) };
        let Some(parsed) = ParsedKey::parse(key) else {
            return Err(Error::corruption(
                &self.path,
                self.block_offset(at),
                "stored key is not an internal key",
            ));
        };
        if parsed.user_key != user_key {
            return Ok(None);
        }
        Ok(Some((parsed.kind, block.value(value).to_vec())))
    }

    /// Entries with user keys within the bounds, double-ended, owning an `Arc` of the table.
    pub(crate) fn iter(
        self: &Arc<Self>,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
    ) -> TableIter {
        TableIter::new(Arc::clone(self), Arc::new((lower, upper)))
    }

    /// [`Table::iter`] with bounds shared by the other iterators of a scan.
    pub(crate) fn iter_shared(self: &Arc<Self>, bounds: &SharedBounds) -> TableIter {
        TableIter::new(Arc::clone(self), Arc::clone(bounds))
    }

    /// The file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Properties.
    pub(crate) fn properties(&self) -> &Properties {
        &self.properties
    }

    /// The first data block whose last key is `>= search` (an internal
    /// key; by user key in an index of user keys), with the part of the
    /// index that holds it, read within `tier` if it is not resident;
    /// `None` if no block's last key is.
    pub(crate) fn find_block<T: ReadTier>(
        &self,
        tier: T,
        search: &[u8],
    ) -> Result<Option<(usize, IndexPart)>, T::Error> {
        let Some(at) = self.index.part_for(search) else {
            return Ok(None);
        };
        let part = self.index_part_in(tier, at)?;
        let block = part.find(search);
        Ok(part.holds(block).then_some((block, part)))
    }

    /// The part of the index that holds data block `at`, read and checked
    /// now if it is not resident (and kept if the keeper keeps it). An
    /// error is not kept: the next use tries again.
    pub(crate) fn index_part(&self, at: usize) -> Result<IndexPart> {
        let part = self
            .index
            .part_of_block(at)
            .ok_or_else(|| self.no_block(at))?;
        self.index_part_in(Files, part)
    }

    /// Every part of the index in order, each with the offset of its
    /// block, checked as a whole and against each other (`verify`: see
    /// [`TableIndex::check_chain`]).
    pub(crate) fn checked_index(&self) -> Result<Vec<(Arc<Index>, u64)>> {
        let mut parts = Vec::with_capacity(self.index.parts());
        for number in 0..self.index.parts() {
            let at = self
                .index
                .part(number)
                .ok_or_else(|| self.no_block(number))?;
            let offset = at.handle.offset;
            parts.push((self.index_part_in(Files, at)?.held().index, offset));
        }
        self.index.check_chain(&self.path, &parts)?;
        Ok(parts)
    }

    /// Index part `at` within `tier`. Counts the use: each saves a read
    /// of the part while it is resident.
    fn index_part_in<T: ReadTier>(&self, tier: T, at: PartAt<'_>) -> Result<IndexPart, T::Error> {
        at.piece.heat().count_use();
        let first = at.first;
        if let Some(index) = at.piece.resident() {
            return Ok(IndexPart { index, first });
        }
        tier.may_read_file()?;
        let bytes = |_: &Index| self.index_part_bytes(at.handle);
        let read = || self.read_index_part(&at);
        let index = at.piece.get_or_read(self.keeper.as_ref(), bytes, read)?;
        Ok(IndexPart { index, first })
    }

    fn read_index_part(&self, at: &PartAt<'_>) -> Result<Index> {
        let (path, offset) = (&self.path, at.handle.offset);
        let data_end = self.properties.stored_data_bytes;
        let file = self.file()?;
        let raw = read_block(file.as_ref(), path, at.handle, self.metadata_limit())?;
        let index =
            Index::decode(raw, data_end, self.version).map_err(|c| c.in_file(path, offset))?;
        self.index
            .check_part(at, &index, &self.properties)
            .map_err(|detail| Error::corruption(path, offset, detail))?;
        Ok(index)
    }

    /// The error for a data block the index does not have.
    fn no_block(&self, at: usize) -> Error {
        Error::corruption(
            &self.path,
            self.index.offset(),
            format!("no data block {at}"),
        )
    }

    /// How many parts the index has (1 if whole).
    #[cfg(test)]
    pub(crate) fn index_parts(&self) -> usize {
        self.index.parts()
    }

    /// How many parts of the index are resident.
    #[cfg(test)]
    pub(crate) fn resident_index_parts(&self) -> usize {
        let resident = |part| {
            self.index
                .part(part)
                .is_some_and(|at| at.piece.resident().is_some())
        };
        (0..self.index.parts())
            .filter(|&part| resident(part))
            .count()
    }

    /// Where index part `part` is stored, and the number of its first data
    /// block.
    #[cfg(test)]
    pub(crate) fn index_part_location(&self, part: usize) -> (u64, usize) {
        let at = self.index.part(part).expect("the index has the part");
        (at.handle.offset, at.first)
    }

    /// Data blocks (what the properties say, and the index agrees with).
    pub(crate) fn data_blocks(&self) -> usize {
        self.properties.data_blocks as usize
    }

    /// The first damage of the key filter, all its partitions read to
    /// find it (for `verify`).
    pub(crate) fn filter_problem(&self) -> Result<Option<Error>> {
        let file = self.file()?;
        self.filter
            .check(file.as_ref(), &self.path, self.metadata_limit())?;
        Ok(self.filter.problem(&self.path))
    }

    /// The leaf of value index `index_id`: present, missing (the table
    /// predates the index) or unreadable (damaged).
    pub(crate) fn value_filter(&self, index_id: u64) -> ValueLeaf {
        self.value_filters().leaf(index_id)
    }

    /// The block value filters of index `index_id`; `None` when a search
    /// must read every block (none written, or damaged).
    pub(crate) fn block_filters(&self, index_id: u64) -> Option<&Arc<BlockFilters>> {
        self.value_filters().blocks(index_id)
    }

    /// The table's format version.
    pub(crate) fn format_version(&self) -> u32 {
        self.version
    }

    /// File offset of the properties block.
    pub(crate) fn properties_offset(&self) -> u64 {
        self.properties_offset
    }

    /// File offset of data block `at` (0 if there is none, or the part of
    /// the index that holds it is not resident).
    pub(crate) fn block_offset(&self, at: usize) -> u64 {
        let Some(part) = self.index.part_of_block(at) else {
            return 0;
        };
        let resident = part.piece.resident().map(|index| IndexPart {
            index,
            first: part.first,
        });
        resident.and_then(|p| p.handle(at)).map_or(0, |h| h.offset)
    }

    /// Data block `at` of the index, from the cache or the file.
    pub(crate) fn data_block(&self, at: usize) -> Result<Arc<Block>> {
        self.data_block_in(Files, at)
    }

    /// [`Table::data_block`] within `tier`.
    fn data_block_in<T: ReadTier>(&self, tier: T, at: usize) -> Result<Arc<Block>, T::Error> {
        let part = self
            .index
            .part_of_block(at)
            .ok_or_else(|| self.no_block(at))?;
        let part = self.index_part_in(tier, part)?;
        self.data_block_at(&part, tier, at)
    }

    /// Data block `at`, found in `part` (of the table's index), from the
    /// cache or, within `tier`, the file.
    pub(crate) fn data_block_at<T: ReadTier, I: std::ops::Deref<Target = Index>>(
        &self,
        part: &IndexPart<I>,
        tier: T,
        at: usize,
    ) -> Result<Arc<Block>, T::Error> {
        let handle = part.handle(at).ok_or_else(|| self.no_block(at))?;
        if let Some(block) = self.cache.get(self.id, handle.offset) {
            return Ok(block);
        }
        tier.may_read_file()?;
        let block = Arc::new(self.read_block_at(handle)?);
        self.cache
            .insert(self.id, handle.offset, Arc::clone(&block));
        Ok(block)
    }

    /// Calls `f` with every entry of data block `at` (read through the
    /// cache), in order: its parsed internal key and its value.
    pub(crate) fn for_each_in_block(
        &self,
        at: usize,
        mut f: impl FnMut(ParsedKey<'_>, &[u8]),
    ) -> Result<()> {
        let block = self.data_block(at)?;
        let corrupt = |detail: String| Error::corruption(&self.path, self.block_offset(at), detail);
        let mut key = Vec::new();
        let mut pos = 0;
        while let Some((next, value)) = block
            .entry_at(pos, &mut key)
            .map_err(|c| c.in_file(&self.path, self.block_offset(at)))?
        {
            let parsed = ParsedKey::parse(&key)
                .ok_or_else(|| corrupt("stored key is not an internal key".into()))?;
            f(parsed, block.value(value));
            pos = next;
        }
        Ok(())
    }

    /// The user key of the last entry of data block `at`.
    pub(crate) fn block_last_user_key(&self, at: usize) -> Option<Vec<u8>> {
        self.index_part(at).ok()?.user_key(at)
    }

    /// Data block `at` read from the file, bypassing the cache.
    pub(crate) fn read_data_block(&self, at: usize) -> Result<Block> {
        let handle = self
            .index_part(at)?
            .handle(at)
            .ok_or_else(|| self.no_block(at))?;
        self.read_block_at(handle)
    }

    /// The data block at `handle`, read from the file.
    fn read_block_at(&self, handle: BlockHandle) -> Result<Block> {
        let offset = handle.offset;
        let file = self.file()?;
        let raw = read_block(
            file.as_ref(),
            &self.path,
            handle,
            self.properties.stored_data_bytes,
        )?;
        Block::decode(raw).map_err(|c| c.in_file(&self.path, offset))
    }
}
