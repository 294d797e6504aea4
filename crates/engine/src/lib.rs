//! # siftdb
//!
//! An embedded LSM-tree key-value store whose reason to exist is its filter
//! layer: a cache-line blocked Bloom or Ribbon filter in front of every
//! table, one hash per lookup shared by every filter it meets, and filter
//! memory spent per level where it saves the most reads (Monkey, with each
//! level on the false-positive curve of its own filter kind; see
//! [`FilterPolicy`]).
//!
//! ```no_run
//! use siftdb::{Db, WriteBatch};
//! # fn main() -> siftdb::Result<()> {
//! let db = Db::builder("/tmp/sift-doc").open()?;
//! db.insert("fruit:apple", "red")?;
//! let mut batch = WriteBatch::new();
//! batch.insert("fruit:banana", "yellow");
//! batch.remove("fruit:apple");
//! db.write(&batch)?;
//! let snapshot = db.snapshot();
//! for item in snapshot.prefix("fruit:").rev() {
//!     let (key, value) = item?;
//!     println!("{} = {}", String::from_utf8_lossy(&key), String::from_utf8_lossy(&value));
//! }
//! println!("{:?}", db.stats().levels);
//! # Ok(())
//! # }
//! ```
//!
//! Writes go to a write-ahead log and a memtable; full memtables are
//! flushed to level-0 tables and merged down by compaction on background
//! threads. See `docs/format.md` for every byte on disk.

mod batch;
mod compaction;
mod db;
mod encoding;
mod error;
mod fence;
mod filter_policy;
pub mod fs;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod iter;
mod key;
mod log;
mod manifest;
mod memtable;
mod options;
mod prefix;
mod read_tier;
mod rng;
mod sstable;
/// Optimistic serializable transactions whose read and write sets are
/// fronted by Bloom filters. See `docs/transactions.md`.
///
/// A [`Transaction`] reads at the snapshot where it began, sees its own
/// writes, and buffers them until [`Transaction::commit`], which validates
/// what it read (keys and scanned ranges) and wrote against the write sets
/// committed since its snapshot, then applies its writes as one
/// [`WriteBatch`] (one WAL record), all under the writer lock.
///
/// The handle needs the hub, so it lives in `db/txn/`; what it is built
/// from does not, and lives in `txn/`: the commit log (`history.rs`), the
/// Bloom-fronted key sets (`keyset.rs`) and the counters (`stats.rs`).
pub mod txn {
    mod history;
    mod keyset;
    mod stats;

    pub use crate::db::{Transaction, TxnIter};
    pub(crate) use history::{CommitLog, CommittedSet, Footprint, ValidationCounts};
    pub(crate) use keyset::FilteredMap;
    pub use keyset::KeySet;
    pub use stats::TxnStats;
    pub(crate) use stats::{Outcome, TxnCounters};
}
mod value_def;
mod verify;
mod version;

pub use batch::{MAX_KEY_LEN, MAX_VALUE_LEN, WriteBatch};
pub use db::{
    Db, DbBuilder, DbIter, Find, FindKeys, FindStats, IndexInfo, IndexStats, LevelStats, Snapshot,
    Stats, copy_database,
};
pub use error::{Error, Result};
pub use filter_policy::{BitsPerKey, FilterPolicy, RangeFilterPolicy};
pub use key::SeqNo;
pub use options::{CompactionStyle, Compression, PerLevel, PersistMode, WalRecovery, WriteOptions};
pub use prefix::{CustomPrefix, PrefixExtractor};
pub use read_tier::InMemory;
pub use sift_filter::BloomShape;
pub use sift_value_index::Method;
pub use sstable::{TableFile, TableSummary, ValueFilterSummary};
pub use txn::{Transaction, TxnIter, TxnStats};
pub use value_def::{ExtractFn, Extractor, IndexDef, LeafSizing};
pub use verify::{Problem, VerifyProgress, VerifyReport, verify, verify_in};
