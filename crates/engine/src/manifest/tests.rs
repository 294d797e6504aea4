//! Manifest files through the fault-injecting file system: create, append,
//! read back, crash, damage.

use std::path::{Path, PathBuf};

use super::*;
use crate::fs::FaultInjectionFs;
use crate::log::{HEADER_LEN, RECORD_HEADER_LEN};

const DIR: &str = "/db";

fn table(id: u64) -> TableMeta {
    TableMeta {
        id,
        level: (id % 3) as u32,
        run: id,
        file_size: 1000 + id,
        entries: 10,
        smallest: format!("key{id}").into_bytes(),
        largest: format!("key{id}z").into_bytes(),
        min_seq: id,
        max_seq: id + 5,
    }
}

/// The snapshot and three later edits.
fn edits() -> Vec<VersionEdit> {
    vec![
        VersionEdit {
            added: vec![table(3), table(4)],
            next_file_number: Some(8),
            log_number: Some(5),
            last_seq: Some(9),
            compaction_style: Some(0),
            ..VersionEdit::default()
        },
        VersionEdit {
            log_number: Some(6),
            ..VersionEdit::default()
        },
        VersionEdit {
            added: vec![table(9)],
            removed: vec![(0, 3)],
            ..VersionEdit::default()
        },
        VersionEdit {
            added: vec![table(10)],
            last_seq: Some(40),
            ..VersionEdit::default()
        },
    ]
}

/// A database directory whose CURRENT names manifest 7 holding `edits()`.
fn written() -> (FaultInjectionFs, PathBuf, Manifest) {
    let fs = FaultInjectionFs::new();
    let dir = Path::new(DIR);
    fs.create_dir_all(dir).unwrap();
    let all = edits();
    let mut manifest = Manifest::create(&fs, dir, 7, &all[0]).unwrap();
    for edit in &all[1..] {
        manifest.append(edit).unwrap();
    }
    (fs, dir.join("MANIFEST-000007"), manifest)
}

#[test]
fn create_append_read_round_trip() {
    let (fs, path, manifest) = written();
    let dir = Path::new(DIR);
    assert_eq!(manifest.file_name(), "MANIFEST-000007");
    assert_eq!(manifest.size(), fs.contents(&path).unwrap().len() as u64);
    // Every edit is durable once `append` returns, and CURRENT names it.
    let after = fs.crash();
    let name = read_current(&after, dir).unwrap().unwrap();
    assert_eq!(name, "MANIFEST-000007");
    assert_eq!(read_manifest(&after, dir, &name).unwrap(), edits());
}

#[test]
fn a_new_manifest_replaces_current() {
    let (fs, _, _) = written();
    let dir = Path::new(DIR);
    let snapshot = VersionEdit {
        added: vec![table(9), table(10)],
        ..VersionEdit::default()
    };
    let mut second = Manifest::create(&fs, dir, 12, &snapshot).unwrap();
    second
        .append(&VersionEdit {
            log_number: Some(13),
            ..VersionEdit::default()
        })
        .unwrap();
    let after = fs.crash();
    let name = read_current(&after, dir).unwrap().unwrap();
    assert_eq!(name, second.file_name());
    let read = read_manifest(&after, dir, &name).unwrap();
    assert_eq!(read.len(), 2);
    assert_eq!(read[0], snapshot);
    // The old manifest is still whole until the caller deletes it.
    assert_eq!(
        read_manifest(&after, dir, "MANIFEST-000007").unwrap(),
        edits()
    );
}

#[test]
fn a_torn_final_edit_is_ignored() {
    let (fs, path, _) = written();
    let dir = Path::new(DIR);
    let full = fs.contents(&path).unwrap();
    let last_len = RECORD_HEADER_LEN + edit::encode_edit(&edits()[3]).len();
    let last_start = full.len() - last_len;
    for cut in last_start..full.len() {
        fs.set_contents(&path, full[..cut].to_vec()).unwrap();
        assert_eq!(
            read_manifest(&fs, dir, "MANIFEST-000007").unwrap(),
            edits()[..3],
            "cut {cut}"
        );
    }
    let mut flipped = full.clone();
    flipped[full.len() - 1] ^= 1;
    fs.set_contents(&path, flipped).unwrap();
    assert_eq!(
        read_manifest(&fs, dir, "MANIFEST-000007").unwrap(),
        edits()[..3]
    );
}

#[test]
fn damage_before_the_last_edit_is_corruption_naming_the_manifest() {
    let (fs, path, _) = written();
    let dir = Path::new(DIR);
    let full = fs.contents(&path).unwrap();
    let second = HEADER_LEN + RECORD_HEADER_LEN + edit::encode_edit(&edits()[0]).len();
    // A payload byte of the snapshot, of the second edit, and a header byte.
    for (at, offset) in [(HEADER_LEN + 9, HEADER_LEN), (second + 8, second), (2, 0)] {
        let mut bytes = full.clone();
        bytes[at] ^= 0x5a;
        fs.set_contents(&path, bytes).unwrap();
        match read_manifest(&fs, dir, "MANIFEST-000007") {
            Err(Error::Corruption {
                path: p, offset: o, ..
            }) => {
                assert_eq!((p, o), (path.clone(), offset as u64), "flip at {at}");
            }
            other => panic!("flip at {at}: {other:?}"),
        }
    }
}

#[test]
fn an_edit_that_does_not_decode_is_corruption_at_its_payload() {
    let fs = FaultInjectionFs::new();
    let dir = Path::new(DIR);
    fs.create_dir_all(dir).unwrap();
    let path = dir.join("MANIFEST-000001");
    let mut log = LogWriter::create(&fs, &path, LogKind::Manifest).unwrap();
    log.add_record(&edit::encode_edit(&edits()[0])).unwrap();
    log.add_record(&[99, 1]).unwrap();
    log.sync().unwrap();
    let second = HEADER_LEN + RECORD_HEADER_LEN + edit::encode_edit(&edits()[0]).len();
    match read_manifest(&fs, dir, "MANIFEST-000001") {
        Err(Error::Corruption {
            path: p,
            offset,
            detail,
        }) => {
            assert_eq!(p, path);
            assert_eq!(offset, (second + RECORD_HEADER_LEN) as u64);
            assert!(detail.contains("unknown field tag 99"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn missing_empty_and_wrong_kind_manifests_are_corruption() {
    let fs = FaultInjectionFs::new();
    let dir = Path::new(DIR);
    fs.create_dir_all(dir).unwrap();
    let corrupt_at = |name: &str| match read_manifest(&fs, dir, name) {
        Err(Error::Corruption { path, .. }) => assert_eq!(path, dir.join(name)),
        other => panic!("{name}: {other:?}"),
    };
    corrupt_at("MANIFEST-000003");
    LogWriter::create(&fs, &dir.join("MANIFEST-000004"), LogKind::Manifest).unwrap();
    corrupt_at("MANIFEST-000004");
    fs.create(&dir.join("MANIFEST-000005")).unwrap();
    corrupt_at("MANIFEST-000005");
    let mut wal = LogWriter::create(&fs, &dir.join("MANIFEST-000006"), LogKind::Wal).unwrap();
    wal.add_record(&[]).unwrap();
    corrupt_at("MANIFEST-000006");
}

#[test]
fn a_crash_before_current_moves_keeps_the_old_manifest() {
    let (fs, _, _) = written();
    let dir = Path::new(DIR);
    // A new manifest written but CURRENT.tmp never renamed: CURRENT still
    // names the old one, whole.
    let mut log = LogWriter::create(&fs, &dir.join("MANIFEST-000020"), LogKind::Manifest).unwrap();
    log.add_record(&edit::encode_edit(&VersionEdit::default()))
        .unwrap();
    log.sync().unwrap();
    let after = fs.crash();
    let name = read_current(&after, dir).unwrap().unwrap();
    assert_eq!(read_manifest(&after, dir, &name).unwrap(), edits());
}
