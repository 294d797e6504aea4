//! `exact-index`: the secondary index a RocksDB user builds by hand, in the
//! same store as the records.
//!
//! Every write of a record also writes the index entry
//! `[0xff, b'x'] ++ u32 big-endian len(value) ++ value ++ primary key`
//! (empty value), in the same [`WriteBatch`]; the length makes one value's
//! entries a prefix no other value shares. An update must first read the
//! record's old version (`get`) and delete the old value's entry
//! (read-before-write): a user cannot know whether a key is new, so every
//! write reads. A search is a prefix scan over the value's entries, then
//! validation: each primary key is read (`get`) and kept only if its
//! record's field still equals the value, as a user must do when index
//! and records could drift. Primary keys never start with `0xff`, so
//! entries and records never collide.

use siftdb::{Db, Extractor, WriteBatch};

/// First bytes of every index entry.
const PREFIX: [u8; 2] = [0xff, b'x'];

/// The prefix of every entry of `value`.
fn value_prefix(value: &[u8]) -> anyhow::Result<Vec<u8>> {
    let len = u32::try_from(value.len())?;
    let mut out = Vec::with_capacity(PREFIX.len() + 4 + value.len());
    out.extend_from_slice(&PREFIX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(value);
    Ok(out)
}

/// The entry of `key` under `value`.
fn entry(value: &[u8], key: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut out = value_prefix(value)?;
    out.extend_from_slice(key);
    Ok(out)
}

/// The values `extractor` yields from `record`.
fn fields(extractor: &Extractor, record: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    extractor.extract(record, &mut |v| out.push(v.to_vec()));
    out
}

/// Writes records with their index entries.
pub struct Writer<'a> {
    db: &'a Db,
    extractor: Extractor,
    batch: WriteBatch,
}

impl<'a> Writer<'a> {
    /// A writer into `db` for the field `extractor` yields.
    pub fn new(db: &'a Db, extractor: Extractor) -> Self {
        Self {
            db,
            extractor,
            batch: WriteBatch::new(),
        }
    }

    /// Stores `record` (whose field is `value`) under `key`: reads the old
    /// version, deletes its entries for other values, and writes the record
    /// and its entry in one batch.
    pub fn put(&mut self, key: &[u8], record: &[u8], value: &[u8]) -> anyhow::Result<()> {
        anyhow::ensure!(
            !key.starts_with(&PREFIX[..1]),
            "a primary key starts with 0xff"
        );
        self.batch.clear();
        if let Some(old) = self.db.get(key)? {
            for stale in fields(&self.extractor, &old) {
                if stale != value {
                    self.batch.remove(entry(&stale, key)?);
                }
            }
        }
        self.batch.insert(key, record);
        self.batch.insert(entry(value, key)?, b"");
        self.db.write(&self.batch)?;
        Ok(())
    }
}

/// What one exact-index search found and did.
pub struct Answer {
    /// Primary keys whose record has the value, in key order.
    pub keys: Vec<Vec<u8>>,
    /// Index entries read by the prefix scan.
    pub entries: u64,
    /// Entries whose record no longer had the value (none, when every
    /// write went through [`Writer`]).
    pub stale: u64,
}

/// The keys whose field (by `extractor`) is `value`: a prefix scan over
/// the value's entries, then a `get` of each record to validate it.
pub fn find(db: &Db, extractor: &Extractor, value: &[u8]) -> anyhow::Result<Answer> {
    let prefix = value_prefix(value)?;
    let mut answer = Answer {
        keys: Vec::new(),
        entries: 0,
        stale: 0,
    };
    for item in db.prefix(&prefix) {
        let (index_key, _) = item?;
        answer.entries += 1;
        let key = &index_key[prefix.len()..];
        let holds = db
            .get(key)?
            .is_some_and(|record| fields(extractor, &record).iter().any(|f| f == value));
        if holds {
            answer.keys.push(key.to_vec());
        } else {
            answer.stale += 1;
        }
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_of_one_value_share_a_prefix_no_other_value_has() {
        let a = entry(b"ab", b"k1").unwrap();
        let b = entry(b"a", b"bk1").unwrap();
        assert_ne!(a, b);
        assert!(a.starts_with(&value_prefix(b"ab").unwrap()));
        assert!(!b.starts_with(&value_prefix(b"ab").unwrap()));
        assert_eq!(&a[..7], &[0xff, b'x', 0, 0, 0, 2, b'a']);
    }

    #[test]
    fn updates_move_the_entry_and_searches_validate() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::builder(dir.path()).open().unwrap();
        let csv = Extractor::delimited(0, b',');
        let mut writer = Writer::new(&db, csv.clone());
        writer.put(b"k1", b"red,1", b"red").unwrap();
        writer.put(b"k2", b"red,2", b"red").unwrap();
        writer.put(b"k1", b"blue,3", b"blue").unwrap();
        let red = find(&db, &csv, b"red").unwrap();
        assert_eq!(red.keys, vec![b"k2".to_vec()]);
        assert_eq!((red.entries, red.stale), (1, 0));
        assert_eq!(find(&db, &csv, b"blue").unwrap().keys, vec![b"k1".to_vec()]);
        // A record changed behind the index's back is caught by validation.
        db.insert(b"k2", b"green,4").unwrap();
        let red = find(&db, &csv, b"red").unwrap();
        assert!(red.keys.is_empty());
        assert_eq!(red.stale, 1);
        assert!(writer.put(&[0xff, 1], b"x,1", b"x").is_err());
    }
}
