//! `Db::checkpoint`: a copy that opens as a database holding every write
//! acknowledged before it, and nothing written after.

use std::collections::BTreeMap;

use siftdb::{Db, DbBuilder, Error};

fn all(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.range::<Vec<u8>, _>(..).map(Result::unwrap).collect()
}

/// A database at `path` with small memtables and tables: many tables.
fn small_tables(path: impl AsRef<std::path::Path>) -> DbBuilder {
    Db::builder(path)
        .memtable_bytes(16 << 10)
        .table_target_bytes(16 << 10)
}

/// Writes 2,000 keys.
fn fill(db: &Db) -> siftdb::Result<()> {
    for i in 0..2_000u32 {
        db.insert(format!("key{i:05}"), format!("value{i}"))?;
    }
    Ok(())
}

#[test]
fn a_checkpoint_opens_with_every_earlier_write_and_no_later_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_tables(dir.path().join("db")).open().unwrap();
    let mut model = BTreeMap::new();
    for i in 0..5_000u32 {
        let key = format!("key{:05}", i * 7 % 5_000).into_bytes();
        if i % 11 == 0 {
            db.remove(&key).unwrap();
            model.remove(&key);
        } else {
            let value = format!("value{i}").into_bytes();
            db.insert(&key, &value).unwrap();
            model.insert(key, value);
        }
    }
    // Some in tables, the rest in the memtable.
    db.wait_for_compactions().unwrap();
    db.insert(b"last", b"in the memtable").unwrap();
    model.insert(b"last".to_vec(), b"in the memtable".to_vec());
    let copy_dir = dir.path().join("copy");
    db.checkpoint(&copy_dir).unwrap();
    db.insert(b"after", b"not in the copy").unwrap();
    db.remove(b"last").unwrap();

    let copy = Db::open(&copy_dir).unwrap();
    assert_eq!(all(&copy), model);
    // The copy is a database of its own: it takes writes and reopens.
    copy.insert(b"own", b"write").unwrap();
    drop(copy);
    let copy = Db::open(&copy_dir).unwrap();
    assert_eq!(copy.get(b"own").unwrap(), Some(b"write".to_vec()));
    assert_eq!(copy.get(b"after").unwrap(), None);
    // The original is untouched by it.
    assert_eq!(db.get(b"after").unwrap(), Some(b"not in the copy".to_vec()));
    assert_eq!(db.get(b"last").unwrap(), None);
}

#[test]
fn an_empty_database_checkpoints_to_an_empty_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db")).unwrap();
    db.checkpoint(dir.path().join("copy")).unwrap();
    let copy = Db::open(dir.path().join("copy")).unwrap();
    assert!(all(&copy).is_empty());
}

#[test]
fn a_checkpoint_never_overwrites_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db")).unwrap();
    let other = Db::open(dir.path().join("other")).unwrap();
    other.insert(b"k", b"v").unwrap();
    drop(other);
    let err = db.checkpoint(dir.path().join("other")).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    let other = Db::open(dir.path().join("other")).unwrap();
    assert_eq!(other.get(b"k").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn a_checkpoint_links_the_tables_and_keeps_them_when_the_database_drops_them() {
    use std::os::unix::fs::MetadataExt;

    let dir = tempfile::tempdir().unwrap();
    // Nothing deletes a table between the checkpoint and the check.
    let db = small_tables(dir.path().join("db"))
        .background_threads(false)
        .open()
        .unwrap();
    fill(&db).unwrap();
    db.flush().unwrap();
    let before = all(&db);
    let copy_dir = dir.path().join("copy");
    db.checkpoint(&copy_dir).unwrap();
    let tables: Vec<_> = std::fs::read_dir(&copy_dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "sst"))
        .collect();
    assert!(!tables.is_empty());
    for table in &tables {
        let original = dir.path().join("db").join(table.file_name().unwrap());
        let (copy, original) = (table.metadata().unwrap(), original.metadata().unwrap());
        assert_eq!(
            copy.ino(),
            original.ino(),
            "{} is not a link",
            table.display()
        );
    }
    // The database rewrites and deletes every table it had: the copy's
    // names keep them.
    for i in 0..2_000u32 {
        db.remove(format!("key{i:05}")).unwrap();
    }
    db.compact().unwrap();
    assert!(all(&db).is_empty());
    drop(db);
    let copy = Db::open(&copy_dir).unwrap();
    assert_eq!(all(&copy), before);
}

#[test]
fn a_copy_of_a_closed_database_opens_and_changes_on_its_own() {
    use std::os::unix::fs::MetadataExt;

    let dir = tempfile::tempdir().unwrap();
    let db = small_tables(dir.path().join("db")).open().unwrap();
    fill(&db).unwrap();
    let (snapshot, copy) = (dir.path().join("snapshot"), dir.path().join("copy"));
    db.checkpoint(&snapshot).unwrap();
    let expected = all(&db);
    drop(db);
    siftdb::copy_database(&siftdb::fs::StdFs, &snapshot, &copy).unwrap();

    let mut tables = 0;
    for entry in std::fs::read_dir(&copy).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let source = snapshot.join(&name).metadata().unwrap();
        let shared = path.metadata().unwrap().ino() == source.ino();
        // Tables are shared; what a database writes is its own.
        assert_eq!(shared, name.ends_with(".sst"), "{name}");
        tables += usize::from(shared);
    }
    assert!(tables > 0);
    let copied = Db::open(&copy).unwrap();
    assert_eq!(all(&copied), expected);
    for i in 0..2_000u32 {
        copied.remove(format!("key{i:05}")).unwrap();
    }
    copied.compact().unwrap();
    drop(copied);
    assert_eq!(all(&Db::open(&snapshot).unwrap()), expected);
    assert!(all(&Db::open(&copy).unwrap()).is_empty());
}
