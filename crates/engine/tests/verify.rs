//! `siftdb::verify` on real directories: a clean database has no problem,
//! and each kind of damage is one problem naming the damaged file (and
//! offset), while every other file is still checked.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::fs;
use std::path::{Path, PathBuf};

use siftdb::{
    CompactionStyle, Db, Error, Extractor, IndexDef, Problem, TableFile, VerifyProgress,
    VerifyReport, WriteBatch, WriteOptions,
};

/// Bytes of a log file's header; the first record starts there
/// (docs/format.md, logs).
const LOG_HEADER_LEN: u64 = 12;

/// Bytes of a log record's header (checksum, length) before its payload.
const RECORD_HEADER_LEN: u64 = 8;

fn builder(dir: &Path) -> siftdb::DbBuilder {
    Db::builder(dir)
        .memtable_bytes(16 << 10)
        .table_target_bytes(16 << 10)
        .compaction_style(CompactionStyle::Leveled {
            l0_trigger: 2,
            size_ratio: 3,
            l1_bytes: 32 << 10,
        })
        .background_threads(false)
        .value_index(IndexDef::new("color", Extractor::json_field("/color")))
        .value_index(IndexDef::new("whole", Extractor::WholeValue))
}

/// A database with tables in several levels (after flushes and a full
/// compaction) and value indexes; returns its open handle.
fn populate(dir: &Path) -> Db {
    let db = builder(dir).open().unwrap();
    let colors = ["red", "green", "blue", "amber", "violet"];
    for i in 0..1500u32 {
        let value = format!(r#"{{"color":"{}","n":{i}}}"#, colors[i as usize % 5]);
        db.insert(format!("key{:05}", (i * 7) % 1000), value)
            .unwrap();
    }
    db.compact().unwrap();
    for i in 0..400u32 {
        db.insert(format!("key{:05}", i * 3), r#"{"color":"teal"}"#)
            .unwrap();
        if i % 10 == 0 {
            db.remove(format!("key{:05}", i * 5)).unwrap();
        }
    }
    db.flush().unwrap();
    db
}

/// Populates, then writes three synced batches that stay in the WAL, and
/// closes the database.
fn populate_with_wal(dir: &Path) {
    let db = populate(dir);
    for round in 0..3u32 {
        let mut batch = WriteBatch::new();
        for i in 0..4u32 {
            batch.insert(format!("wal{round}-{i}"), r#"{"color":"red"}"#);
        }
        db.write_with(&batch, WriteOptions::sync()).unwrap();
    }
    drop(db);
}

fn run(dir: &Path) -> (VerifyReport, Vec<VerifyProgress>) {
    let mut steps = Vec::new();
    let report = siftdb::verify(dir, &mut |p| steps.push(p)).unwrap();
    (report, steps)
}

/// The database's files whose names end with `suffix`, sorted.
fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    out.sort();
    out
}

/// The manifest CURRENT names.
fn live_manifest(dir: &Path) -> PathBuf {
    let current = fs::read_to_string(dir.join("CURRENT")).unwrap();
    dir.join(current.lines().next().unwrap())
}

fn flip(path: &Path, at: u64) {
    let mut bytes = fs::read(path).unwrap();
    bytes[at as usize] ^= 0x41;
    fs::write(path, bytes).unwrap();
}

fn problems_in<'a>(report: &'a VerifyReport, path: &Path) -> Vec<&'a Problem> {
    report.problems.iter().filter(|p| p.path == path).collect()
}

#[test]
fn a_clean_database_has_no_problem_and_progress_reaches_the_total() {
    let dir = tempfile::tempdir().unwrap();
    populate_with_wal(dir.path());
    let (report, steps) = run(dir.path());
    assert!(report.is_clean(), "{:?}", report.problems);
    assert!(report.problems.is_empty());
    let tables = files(dir.path(), ".sst").len() as u64;
    assert!(tables >= 2, "{tables} tables");
    assert_eq!(report.tables, tables);
    assert_eq!(report.logs, files(dir.path(), ".wal").len() as u64);
    assert!(report.logs >= 1);
    assert!(
        report.notes.is_empty(),
        "nothing to note: {:?}",
        report.notes
    );
    // Progress: after CURRENT and the manifest, then once per file; never
    // backwards, ending at the total, which is every checked file's bytes.
    assert_eq!(steps.len() as u64, 1 + report.tables + report.logs);
    assert!(steps.windows(2).all(|w| w[0].bytes_done <= w[1].bytes_done));
    let last = steps.last().unwrap();
    assert_eq!(last.bytes_done, last.bytes_total);
    assert_eq!(last.bytes_total, report.bytes);
    let on_disk: u64 = ["CURRENT", ".sst", ".wal"]
        .iter()
        .flat_map(|s| files(dir.path(), s))
        .chain([live_manifest(dir.path())])
        .map(|p| fs::metadata(p).unwrap().len())
        .sum();
    assert_eq!(report.bytes, on_disk);
    // And the database it judged clean opens and reads.
    let db = builder(dir.path()).open().unwrap();
    assert!(db.get("wal2-3").unwrap().is_some());
}

#[test]
fn flipped_bytes_in_two_tables_are_two_problems_with_offsets() {
    let dir = tempfile::tempdir().unwrap();
    drop(populate(dir.path()));
    let tables = files(dir.path(), ".sst");
    assert!(tables.len() >= 2);
    // Data blocks come first in a table: byte 100 is in the first one.
    for table in &tables[..2] {
        flip(table, 100);
    }
    let (report, _) = run(dir.path());
    assert_eq!(report.problems.len(), 2, "{:?}", report.problems);
    for table in &tables[..2] {
        let found = problems_in(&report, table);
        assert_eq!(found.len(), 1, "{table:?}: {:?}", report.problems);
        // Where the table's own check sees the damage: the checksum of
        // the first block.
        let offset = found[0].offset.unwrap();
        match TableFile::open(table).unwrap().verify() {
            Err(Error::Corruption { offset: own, .. }) => assert_eq!(offset, own),
            other => panic!("{other:?}"),
        }
        assert!(found[0].detail.contains("checksum"), "{}", found[0]);
        assert!(
            found[0]
                .to_string()
                .starts_with(&format!("{} at offset {offset}: ", table.display())),
            "{}",
            found[0]
        );
    }
    assert_eq!(report.tables, tables.len() as u64);
}

#[test]
fn a_flipped_byte_in_a_wal_record_is_a_problem_at_the_record_and_tables_are_still_checked() {
    let dir = tempfile::tempdir().unwrap();
    populate_with_wal(dir.path());
    let wal = files(dir.path(), ".wal").pop().unwrap();
    let size = fs::metadata(&wal).unwrap().len();
    assert!(
        size > LOG_HEADER_LEN + 3 * RECORD_HEADER_LEN,
        "the WAL holds records"
    );
    // A byte of the first of three records: damage, not a torn tail.
    flip(&wal, LOG_HEADER_LEN + RECORD_HEADER_LEN + 2);
    let table = files(dir.path(), ".sst").pop().unwrap();
    flip(&table, 50);
    // Point-in-time recovery would open it, as of the batches before the
    // damage; verify still reports the damage.
    assert!(matches!(
        builder(dir.path())
            .wal_recovery(siftdb::WalRecovery::AbsoluteConsistency)
            .open(),
        Err(Error::Corruption { .. })
    ));
    let (report, _) = run(dir.path());
    let at_wal = problems_in(&report, &wal);
    assert_eq!(at_wal.len(), 1, "{:?}", report.problems);
    assert_eq!(at_wal[0].offset, Some(LOG_HEADER_LEN));
    assert_eq!(
        problems_in(&report, &table).len(),
        1,
        "{:?}",
        report.problems
    );
    assert_eq!(report.problems.len(), 2, "{:?}", report.problems);
    assert_eq!(report.tables, files(dir.path(), ".sst").len() as u64);
}

#[test]
fn a_cut_wal_tail_is_a_note_not_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    populate_with_wal(dir.path());
    let wal = files(dir.path(), ".wal").pop().unwrap();
    let mut bytes = fs::read(&wal).unwrap();
    bytes.truncate(bytes.len() - 5);
    fs::write(&wal, bytes).unwrap();
    let (report, _) = run(dir.path());
    assert!(report.is_clean(), "{:?}", report.problems);
    let name = wal.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains(&name) && n.contains("cut")),
        "{:?}",
        report.notes
    );
}

#[test]
fn a_deleted_table_is_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    drop(populate(dir.path()));
    let tables = files(dir.path(), ".sst");
    fs::remove_file(&tables[0]).unwrap();
    let (report, _) = run(dir.path());
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    let problem = &report.problems[0];
    assert_eq!(problem.path, tables[0]);
    assert_eq!(problem.offset, None);
    assert!(problem.detail.contains("does not exist"), "{problem}");
    assert_eq!(report.tables, tables.len() as u64 - 1);
}

#[test]
fn a_damaged_manifest_is_a_problem_and_every_table_is_still_checked() {
    let dir = tempfile::tempdir().unwrap();
    drop(populate(dir.path()));
    let manifest = live_manifest(dir.path());
    // A byte of the first record (the snapshot), which later ones follow.
    flip(&manifest, LOG_HEADER_LEN + RECORD_HEADER_LEN + 1);
    let tables = files(dir.path(), ".sst");
    flip(&tables[0], 30);
    let (report, _) = run(dir.path());
    let at_manifest = problems_in(&report, &manifest);
    assert_eq!(at_manifest.len(), 1, "{:?}", report.problems);
    assert_eq!(at_manifest[0].offset, Some(LOG_HEADER_LEN));
    assert_eq!(problems_in(&report, &tables[0]).len(), 1);
    assert_eq!(report.problems.len(), 2, "{:?}", report.problems);
    assert_eq!(report.tables, tables.len() as u64);
    assert_eq!(report.logs, files(dir.path(), ".wal").len() as u64);
}

#[test]
fn custom_extractors_and_tables_without_a_leaf_are_notes() {
    let dir = tempfile::tempdir().unwrap();
    let words = || {
        IndexDef::new(
            "words",
            Extractor::custom("words", |v, out| v.split(|&b| b == b' ').for_each(out)),
        )
    };
    let db = Db::builder(dir.path())
        .background_threads(false)
        .value_index(words())
        .open()
        .unwrap();
    db.insert("a", "one two").unwrap();
    db.flush().unwrap();
    // Tables written before this index lack its leaf until the backfill.
    db.add_index(IndexDef::new("later", Extractor::WholeValue))
        .unwrap();
    drop(db);
    let (report, _) = run(dir.path());
    assert!(report.is_clean(), "{:?}", report.problems);
    assert!(
        report.notes.iter().any(|n| n.contains("custom \"words\"")),
        "{:?}",
        report.notes
    );
    assert!(
        report.notes.iter().any(|n| n.contains("\"later\"")),
        "{:?}",
        report.notes
    );
}

#[test]
fn an_open_database_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let db = populate(dir.path());
    match siftdb::verify(dir.path(), &mut |_| {}) {
        Err(Error::Locked { path }) => assert_eq!(path, dir.path()),
        other => panic!("expected Locked, got {other:?}"),
    }
    drop(db);
    assert!(run(dir.path()).0.is_clean());
}

#[test]
fn a_directory_without_a_database_is_an_error_and_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("notes.txt"), "not a database").unwrap();
    assert!(matches!(
        siftdb::verify(dir.path(), &mut |_| {}),
        Err(Error::InvalidArgument(_))
    ));
    assert!(
        !dir.path().join("LOCK").exists(),
        "no lock file was created"
    );
    let missing = dir.path().join("missing");
    assert!(matches!(
        siftdb::verify(&missing, &mut |_| {}),
        Err(Error::Io { .. })
    ));
}

#[test]
fn an_open_database_verifies_a_checkpoint_of_itself_and_names_its_own_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = populate(dir.path());
    db.insert("fresh", r#"{"color":"red"}"#).unwrap();
    let report = db.verify().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    // The memtable was flushed first, so every live table was checked.
    let tables = files(dir.path(), ".sst");
    assert_eq!(report.tables, tables.len() as u64);
    let leftovers: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| name.to_string_lossy().starts_with("verify-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    flip(&tables[0], 100);
    let report = db.verify().unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert_eq!(report.problems[0].path, tables[0]);
    assert!(report.problems[0].offset.is_some());
    // The database stays open and writable.
    db.insert("after", "x").unwrap();
    assert_eq!(db.get("after").unwrap().as_deref(), Some(&b"x"[..]));
}
