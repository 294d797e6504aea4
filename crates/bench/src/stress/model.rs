//! What the stress test writes and how it reads it back: keys owned by one
//! thread each, values that name their key and version, the per-key
//! [`State`] the expected-state file holds, and the database settings.
//!
//! Key `i` of thread `t` is `s{t:02}:{i:05}`: zero-padded, so key order is
//! index order within a thread and threads' key ranges never interleave.
//! Its value at version `v` is `key;v;tag;pad` (version in hex): a value read
//! under the wrong key, or an older version, does not decode as the
//! expected one. `tag` is what the value index holds (column 2); it names
//! the thread, so a search by value returns only that thread's keys and the
//! thread can check the answer exactly.

use std::fmt;
use std::path::Path;

use sift_filter::mix64;
use siftdb::{CompactionStyle, Db, DbBuilder, Extractor, FilterPolicy, IndexDef};

/// Name of the value index over the values' tag column.
pub const INDEX: &str = "tag";

/// Distinct tags per thread: with thousands of keys, a search returns a
/// few hundred of them (enough to be a real answer, few enough to compare).
pub const TAGS: u64 = 32;

/// Longest padding: values stay small records (about 25 to 55 bytes).
const MAX_PAD: u64 = 24;

/// Digits of a key's index.
pub const INDEX_DIGITS: usize = 5;

/// Opens the stress database with small memtables and tables, so that
/// flushes and compactions (on background threads, the default) happen
/// many times a second, and with the value index declared.
///
/// Sizes: a 64 KiB memtable holds about 1,000 writes; L1 targets 256 KiB
/// and each level 4x the one above, so a few thousand keys per thread fill
/// two or three levels. Key filters are partitioned every 128 keys and the
/// metadata budget is 64 KiB, a small share of the metadata, so that tables,
/// indexes and filter partitions are evicted and read again all along.
pub fn open_db(path: &Path) -> siftdb::Result<Db> {
    builder(path).open()
}

/// The builder [`open_db`] opens with.
pub fn builder(path: &Path) -> DbBuilder {
    Db::builder(path)
        .memtable_bytes(64 << 10)
        .table_target_bytes(64 << 10)
        .block_bytes(1024)
        .block_cache_bytes(1 << 20)
        .filter_memory_bytes(64 << 10)
        .filter_policy(FilterPolicy {
            partition_keys: 128,
            ..FilterPolicy::default()
        })
        .compaction_style(CompactionStyle::Leveled {
            l0_trigger: 4,
            size_ratio: 4,
            l1_bytes: 256 << 10,
        })
        .value_index(IndexDef::new(INDEX, Extractor::delimited(2, b';')))
}

/// The key-space of one thread.
#[derive(Clone, Copy, Debug)]
pub struct Space {
    /// The owning thread.
    pub thread: u32,
    /// Keys it owns: indexes `0..keys`.
    pub keys: u32,
}

impl Space {
    /// Key `index` of this thread.
    pub fn key(&self, index: u32) -> Vec<u8> {
        format!("s{:02}:{index:0INDEX_DIGITS$}", self.thread).into_bytes()
    }

    /// Every key of this thread starts with it.
    pub fn prefix(&self) -> Vec<u8> {
        format!("s{:02}:", self.thread).into_bytes()
    }

    /// The index of `key` if this thread owns it.
    pub fn index_of(&self, key: &[u8]) -> Option<u32> {
        let digits = key.strip_prefix(self.prefix().as_slice())?;
        if digits.len() != INDEX_DIGITS || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let index: u32 = std::str::from_utf8(digits).ok()?.parse().ok()?;
        (index < self.keys).then_some(index)
    }

    /// The value of key `index` at `version`.
    pub fn value(&self, index: u32, version: u64) -> Vec<u8> {
        let (tag, pad) = self.shape(index, version);
        let mut value = self.key(index);
        value.extend_from_slice(format!(";{version:x};{};", self.tag_name(tag)).as_bytes());
        value.resize(value.len() + pad as usize, b'x');
        value
    }

    /// The tag (`0..TAGS`) of key `index` at `version`.
    pub fn tag(&self, index: u32, version: u64) -> u64 {
        self.shape(index, version).0
    }

    /// What the index holds for tag number `tag` of this thread.
    pub fn tag_name(&self, tag: u64) -> String {
        format!("t{:02}.{tag}", self.thread)
    }

    /// Tag and padding length, a hash of thread, key and version.
    fn shape(&self, index: u32, version: u64) -> (u64, u64) {
        let h = mix64(mix64(u64::from(self.thread) << 32 | u64::from(index)) ^ version);
        (h % TAGS, (h >> 32) % (MAX_PAD + 1))
    }

    /// The version `value` holds if it is a well-formed value of key
    /// `index`, else why not.
    pub fn decode(&self, index: u32, value: &[u8]) -> Result<u64, String> {
        let text = std::str::from_utf8(value).map_err(|_| "not UTF-8".to_owned())?;
        let mut fields = text.split(';');
        let key = fields.next().unwrap_or_default();
        if key.as_bytes() != self.key(index).as_slice() {
            return Err(format!("a value of key {key:?}"));
        }
        let version = fields
            .next()
            .and_then(|v| u64::from_str_radix(v, 16).ok())
            .ok_or_else(|| format!("no version in {text:?}"))?;
        if value != self.value(index, version).as_slice() {
            return Err(format!("garbled value {text:?}"));
        }
        Ok(version)
    }

    /// Whether `found` (a read of key `index`) is what `expected` says.
    pub fn matches(&self, index: u32, expected: State, found: Option<&[u8]>) -> bool {
        match found {
            None => !expected.present(),
            Some(value) => {
                expected.present() && self.decode(index, value) == Ok(expected.version())
            }
        }
    }

    /// How a read of key `index` reads in a divergence report.
    pub fn describe(&self, index: u32, found: Option<&[u8]>) -> String {
        match found {
            None => "absent".to_owned(),
            Some(value) => match self.decode(index, value) {
                Ok(version) => format!("v{version}"),
                Err(why) => why,
            },
        }
    }
}

/// A key's state: the version of its last write and whether that write
/// was a value or a deletion. Stored as one little-endian `u64`,
/// `version << 1 | present`; 0 is "never written" (version 0, absent).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct State(u64);

impl State {
    /// The state as stored.
    pub fn from_word(word: u64) -> Self {
        Self(word)
    }

    /// The stored word.
    pub fn word(self) -> u64 {
        self.0
    }

    /// Version of the last write (0: never written).
    pub fn version(self) -> u64 {
        self.0 >> 1
    }

    /// Whether the key holds a value.
    pub fn present(self) -> bool {
        self.0 & 1 == 1
    }

    /// The state after the next write: a value if `present`, else a
    /// deletion, one version later.
    pub fn next(self, present: bool) -> Self {
        Self(((self.version() + 1) << 1) | u64::from(present))
    }
}

impl fmt::Display for State {
    /// `v7` for a value, `absent` for a deletion or a key never written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.present() {
            write!(f, "v{}", self.version())
        } else {
            f.write_str("absent")
        }
    }
}

/// A read that does not agree with the expected state.
#[derive(Clone, Debug)]
pub struct Divergence {
    /// The operation or check that saw it.
    pub what: String,
    /// The key (or keys, or file) concerned.
    pub key: String,
    /// What the expected state says.
    pub expected: String,
    /// What was found.
    pub found: String,
}

impl Divergence {
    /// A divergence of `what` on `key`.
    pub fn new(
        what: impl Into<String>,
        key: impl AsRef<[u8]>,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> Self {
        Self {
            what: what.into(),
            key: String::from_utf8_lossy(key.as_ref()).into_owned(),
            expected: expected.into(),
            found: found.into(),
        }
    }
}

impl fmt::Display for Divergence {
    /// One line: `what: key K: expected E, found F`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: key {}: expected {}, found {}",
            self.what, self.key, self.expected, self.found
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_decode_only_under_their_key_and_version() {
        let space = Space {
            thread: 3,
            keys: 100,
        };
        let value = space.value(42, 7);
        assert_eq!(space.decode(42, &value), Ok(7));
        assert!(space.decode(41, &value).is_err());
        assert!(space.matches(42, State::from_word(7 << 1 | 1), Some(&value)));
        assert!(!space.matches(42, State::from_word(6 << 1 | 1), Some(&value)));
        assert!(space.matches(42, State::from_word(8 << 1), None));
        let other = Space {
            thread: 4,
            keys: 100,
        };
        assert!(other.decode(42, &value).is_err());
        assert_eq!(space.index_of(&space.key(42)), Some(42));
        assert_eq!(other.index_of(&space.key(42)), None);
        assert_eq!(space.index_of(b"s03:00100"), None);
    }

    #[test]
    fn states_count_versions_through_deletions() {
        let s = State::default();
        assert!(!s.present());
        let s = s.next(true).next(false);
        assert_eq!((s.version(), s.present()), (2, false));
        assert_eq!(State::from_word(s.word()), s);
        assert_eq!(s.next(true).to_string(), "v3");
    }
}
