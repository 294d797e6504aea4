//! Damage that only the crate's internals can make: a manifest that
//! disagrees with its tables or indexes, a WAL record with a good checksum
//! that is not a write batch, and the files the next open would delete.

use std::sync::Arc;

use super::*;
use crate::fs::FaultInjectionFs;
use crate::log::{LogKind, LogWriter};
use crate::manifest::{Manifest, VersionEdit, read_current, read_manifest};
use crate::value_def::{Extractor, IndexDef, LeafSizing};
use crate::{Db, DbBuilder};

const DIR: &str = "/db";

fn dir() -> &'static Path {
    Path::new(DIR)
}

fn builder(fs: &FaultInjectionFs) -> DbBuilder {
    Db::builder(DIR)
        .file_system(Arc::new(fs.clone()))
        .background_threads(false)
        .value_index(
            IndexDef::new("color", Extractor::json_field("/color"))
                .leaf_bits(1 << 12)
                .leaf_probes(4),
        )
}

/// A closed database with one table of `n` entries, flushed.
fn database(n: u32) -> FaultInjectionFs {
    let fs = FaultInjectionFs::new();
    let db = builder(&fs).open().unwrap();
    for i in 0..n {
        let value = format!(r#"{{"color":"c{}","size":"s{i}"}}"#, i % 3);
        db.insert(format!("k{i:04}"), value).unwrap();
    }
    db.flush().unwrap();
    drop(db);
    fs
}

fn check(fs: &FaultInjectionFs) -> VerifyReport {
    verify_in(fs, dir(), &mut |_| {}).unwrap()
}

fn names(fs: &FaultInjectionFs, suffix: &str) -> Vec<PathBuf> {
    list(fs, dir())
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(suffix))
        .map(|n| dir().join(n))
        .collect()
}

/// Replaces the live manifest by one holding `change`d edits.
fn rewrite_manifest(fs: &FaultInjectionFs, change: impl FnOnce(&mut Vec<VersionEdit>)) {
    let old = read_current(fs, dir()).unwrap().unwrap();
    let mut edits = read_manifest(fs, dir(), &old).unwrap();
    change(&mut edits);
    let mut manifest = Manifest::create(fs, dir(), 999_999, &edits[0]).unwrap();
    for edit in &edits[1..] {
        manifest.append(edit).unwrap();
    }
    fs.remove(&dir().join(old)).unwrap();
}

/// Creates `path` holding `bytes`, durably.
fn write_file(fs: &FaultInjectionFs, path: &Path, bytes: &[u8]) {
    let mut file = fs.create(path).unwrap();
    file.append(bytes).unwrap();
    file.sync().unwrap();
}

fn manifest_path(fs: &FaultInjectionFs) -> PathBuf {
    dir().join(read_current(fs, dir()).unwrap().unwrap())
}

#[test]
fn problems_display_their_file_and_offset() {
    let at = Problem {
        path: "/db/000004.sst".into(),
        offset: Some(4106),
        detail: "block checksum mismatch".into(),
    };
    assert_eq!(
        at.to_string(),
        "/db/000004.sst at offset 4106: block checksum mismatch"
    );
    let whole = Problem { offset: None, ..at };
    assert_eq!(whole.to_string(), "/db/000004.sst: block checksum mismatch");
}

#[test]
fn a_clean_database_in_memory() {
    let fs = database(50);
    let report = check(&fs);
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(report.tables, 1);
    assert!(report.notes.is_empty(), "{:?}", report.notes);
}

#[test]
fn a_leaf_that_misses_values_is_a_problem() {
    let fs = database(40);
    // The same index id now claims to hold sizes: the leaf holds colors.
    rewrite_manifest(&fs, |edits| {
        for edit in edits {
            for index in &mut edit.added_indexes {
                index.extractor = Extractor::json_field("/size");
            }
        }
    });
    let report = check(&fs);
    let table = names(&fs, ".sst").pop().unwrap();
    // The leaf and the block filters both miss the sizes.
    assert_eq!(report.problems.len(), 2, "{:?}", report.problems);
    for (problem, what) in report
        .problems
        .iter()
        .zip(["the leaf", "the block filters"])
    {
        assert_eq!(problem.path, table);
        assert!(problem.offset.is_some());
        assert!(
            problem.detail.contains(what)
                && problem.detail.contains("misses")
                && problem.detail.contains("\"s"),
            "{problem}"
        );
    }
}

#[test]
fn a_leaf_of_another_shape_is_a_problem() {
    let fs = database(10);
    rewrite_manifest(&fs, |edits| {
        for edit in edits {
            for index in &mut edit.added_indexes {
                if let LeafSizing::Fixed(shape) = &mut index.sizing {
                    shape.bits *= 2;
                }
            }
        }
    });
    let report = check(&fs);
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert!(
        report.problems[0].detail.contains("4096 bits"),
        "{}",
        report.problems[0]
    );
}

#[test]
fn a_table_that_disagrees_with_the_manifest_is_a_problem() {
    let fs = database(10);
    rewrite_manifest(&fs, |edits| {
        for edit in edits {
            for meta in &mut edit.added {
                meta.entries += 1;
                meta.max_seq += 1;
            }
        }
    });
    let report = check(&fs);
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    let detail = &report.problems[0].detail;
    assert!(
        detail.contains("10 entries, the manifest says 11") && detail.contains("sequence"),
        "{detail}"
    );
}

#[test]
fn overlapping_tables_of_one_run_are_a_manifest_problem() {
    let fs = database(10);
    let table = names(&fs, ".sst").pop().unwrap();
    let copy = dir().join(filenames::table(500_000));
    write_file(&fs, &copy, &fs.contents(&table).unwrap());
    rewrite_manifest(&fs, |edits| {
        let mut twin = edits.iter().flat_map(|e| &e.added).last().unwrap().clone();
        twin.id = 500_000;
        edits.last_mut().unwrap().added.push(twin);
    });
    let report = check(&fs);
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert_eq!(report.problems[0].path, manifest_path(&fs));
    assert!(report.problems[0].detail.contains("overlap"));
    assert_eq!(report.tables, 2);
}

#[test]
fn a_wal_record_that_is_not_a_batch_is_a_problem_at_its_payload() {
    let fs = database(0);
    let wal = names(&fs, ".wal").pop().unwrap();
    let mut log = LogWriter::create(&fs, &wal, LogKind::Wal).unwrap();
    log.add_record(b"not a write batch").unwrap();
    log.sync().unwrap();
    let report = check(&fs);
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert_eq!(report.problems[0].path, wal);
    assert_eq!(
        report.problems[0].offset,
        Some((crate::log::HEADER_LEN + crate::log::RECORD_HEADER_LEN) as u64)
    );
}

#[test]
fn only_the_newest_wal_may_end_in_a_cut_write() {
    let fs = database(0);
    let db = builder(&fs).open().unwrap();
    db.insert("a", "1").unwrap();
    drop(db);
    let wal = names(&fs, ".wal").pop().unwrap();
    let mut bytes = fs.contents(&wal).unwrap();
    bytes.pop();
    fs.set_contents(&wal, bytes.clone()).unwrap();
    let report = check(&fs);
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(report.notes.len(), 1, "{:?}", report.notes);
    // A newer WAL follows: the cut one was complete before it began.
    let newer = dir().join(filenames::wal(900_000));
    LogWriter::create(&fs, &newer, LogKind::Wal)
        .unwrap()
        .sync()
        .unwrap();
    let report = check(&fs);
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert_eq!(report.problems[0].path, wal);
    assert_eq!(report.logs, 2);
}

#[test]
fn the_wal_the_manifest_needs_must_exist() {
    let fs = database(0);
    for wal in names(&fs, ".wal") {
        fs.remove(&wal).unwrap();
    }
    let report = check(&fs);
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert_eq!(report.problems[0].path, manifest_path(&fs));
    assert!(report.problems[0].detail.contains("missing"));
}

#[test]
fn files_the_next_open_deletes_are_notes() {
    let fs = database(10);
    let table = names(&fs, ".sst").pop().unwrap();
    // File numbers start at 1: number 0 names no live file.
    let extra = [
        filenames::table(700_000),
        filenames::manifest(0),
        filenames::temp(filenames::CURRENT),
        filenames::wal(0),
        "README".to_owned(),
    ];
    for name in &extra {
        write_file(&fs, &dir().join(name), &fs.contents(&table).unwrap());
    }
    let report = check(&fs);
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(report.tables, 1, "the orphan is not checked");
    for name in &extra {
        assert!(
            report.notes.iter().any(|n| n.starts_with(name.as_str())),
            "{name}: {:?}",
            report.notes
        );
    }
}

#[test]
fn a_missing_or_damaged_current_still_checks_every_table() {
    let fs = database(10);
    let current = dir().join(filenames::CURRENT);
    let good = fs.contents(&current).unwrap();
    let mut bad = good.clone();
    bad[0] ^= 1;
    fs.set_contents(&current, bad).unwrap();
    let report = check(&fs);
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert_eq!(report.problems[0].path, current);
    assert_eq!(report.tables, 1);
    fs.remove(&current).unwrap();
    let report = check(&fs);
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert!(report.problems[0].detail.contains("missing"));
    assert_eq!(report.tables, 1);
}

#[test]
fn a_wal_alone_is_an_interrupted_creation() {
    let fs = FaultInjectionFs::new();
    fs.create_dir_all(dir()).unwrap();
    LogWriter::create(&fs, &dir().join(filenames::wal(1)), LogKind::Wal)
        .unwrap()
        .sync()
        .unwrap();
    let report = check(&fs);
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(report.logs, 1);
    assert!(report.notes.iter().any(|n| n.contains("interrupted")));
}

/// `verify` named only the first damaged block of a table; every damaged
/// data block is named now.
#[test]
fn every_damaged_block_of_a_table_is_named() {
    let fs = FaultInjectionFs::new();
    let db = builder(&fs).block_bytes(256).open().unwrap();
    for i in 0..400u32 {
        db.insert(format!("k{i:04}"), format!("value {i}")).unwrap();
    }
    db.flush().unwrap();
    drop(db);
    let path = names(&fs, ".sst").pop().unwrap();
    let offsets: Vec<u64> = {
        let file = crate::sstable::TableFile::open_in(&fs, &path).unwrap();
        let table = file.table();
        let blocks = table.data_blocks();
        assert!(blocks > 10, "{blocks} blocks");
        [1, blocks / 2, blocks - 1]
            .iter()
            .map(|&at| table.index_part(at).unwrap().handle(at).unwrap().offset)
            .collect()
    };
    let mut bytes = fs.contents(&path).unwrap();
    for &offset in &offsets {
        bytes[offset as usize + 3] ^= 0x5a;
    }
    fs.set_contents(&path, bytes).unwrap();
    let report = check(&fs);
    let named: Vec<Option<u64>> = report.problems.iter().map(|p| p.offset).collect();
    let wanted: Vec<Option<u64>> = offsets.iter().copied().map(Some).collect();
    assert_eq!(named, wanted, "{:?}", report.problems);
}
