//! # siftdb
//!
//! An embedded LSM-tree key-value store whose reason to exist is its filter
//! layer: a cache-line blocked Bloom or Ribbon filter in front of every
//! table, one hash per lookup shared by every filter it meets, and filter
//! memory spent per level where it saves the most reads.

#![allow(
    dead_code,
    reason = "skeleton: internal modules are wired into `Db` as they land"
)]

mod encoding;
mod error;
pub mod fs;
mod key;
mod memtable;
mod options;

pub use error::{Error, Result};
pub use key::SeqNo;
pub use options::{
    BitsPerKey, CompactionStyle, Compression, FilterPolicy, PerLevel, PersistMode, WriteOptions,
};
