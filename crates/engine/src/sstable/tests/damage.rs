//! Damage at every offset of a table: reported against the right file, or
//! harmless (inside the key filter), never a panic or a wrong answer.

use std::ops::Bound;
use std::path::Path;

use sift_filter::KeyHash;

use super::{bloom, numbered, open, options, write};
use crate::error::Error;
use crate::filter_policy::{FilterChoice, FilterKindChoice};
use crate::fs::FaultInjectionFs;
use crate::key::Entry;
use crate::options::Compression;
use crate::sstable::{TableFile, footer};

/// What reading every key of a damaged table gives: each lookup either
/// finds the right entry or reports corruption in this file.
fn check_damaged(fs: &FaultInjectionFs, path: &Path, entries: &[Entry], what: &str) -> bool {
    let is_ours = |e: &Error| matches!(e, Error::Corruption { path: p, .. } if p == path);
    let table = match open(fs, path) {
        Ok(table) => table,
        Err(e) => {
            assert!(is_ours(&e), "{what}: open gave {e}");
            return false;
        }
    };
    for e in entries {
        let hash = KeyHash::of(&e.key.user_key);
        assert!(
            table.may_contain(&e.key.user_key, hash),
            "{what}: filter lost a key"
        );
        match table.get(&e.key.user_key, e.key.seq, &mut 0) {
            Ok(found) => assert_eq!(found.as_ref(), Some(e), "{what}: wrong entry"),
            Err(err) => assert!(is_ours(&err), "{what}: get gave {err}"),
        }
    }
    for item in table.iter(Bound::Unbounded, Bound::Unbounded).rev() {
        if let Err(err) = item {
            assert!(is_ours(&err), "{what}: scan gave {err}");
        }
    }
    let inspected = TableFile::open_in(fs, path).unwrap();
    let _ = inspected.properties();
    let verdict = inspected.verify();
    assert!(
        verdict.as_ref().is_err_and(is_ours),
        "{what}: verify said {verdict:?}"
    );
    true
}

#[test]
fn damage_at_every_offset_is_reported_or_harmless() {
    let entries = numbered(200);
    for filter in [
        bloom(10.0),
        FilterChoice {
            kind: FilterKindChoice::Ribbon,
            bits_per_key: 8.0,
        },
    ] {
        let fs = FaultInjectionFs::new();
        let (path, props) = write(
            &fs,
            1,
            &entries,
            options(512, 4, Compression::Lz4, filter, 50),
        );
        assert!(props.filter_partitions > 1);
        let original = fs.contents(&path).unwrap();
        let data_end = props.stored_data_bytes as usize;
        let filter_end = index_offset(&original);
        let mut opened_with_damage = 0;
        for at in 0..original.len() {
            let mut bad = original.clone();
            bad[at] ^= 1 << (at % 8);
            fs.set_contents(&path, bad).unwrap();
            let opened = check_damaged(&fs, &path, &entries, &format!("flip at {at}"));
            opened_with_damage += usize::from(opened);
            // A damaged filter never stops the table from opening.
            if (data_end..filter_end).contains(&at) {
                assert!(opened, "flip at {at} in the filter failed the open");
            }
        }
        assert!(
            opened_with_damage > data_end / 2,
            "data and filter damage open fine"
        );
        for cut in (0..original.len()).step_by(7) {
            fs.set_contents(&path, original[..cut].to_vec()).unwrap();
            check_damaged(&fs, &path, &entries, &format!("cut at {cut}"));
        }
        let mut tampered = original.clone();
        let len = tampered.len();
        tampered[len - 1] = b'X';
        fs.set_contents(&path, tampered).unwrap();
        let err = open(&fs, &path).unwrap_err();
        assert!(
            matches!(&err, Error::Corruption { offset, .. } if *offset == (len - 4) as u64),
            "{err}"
        );
    }
}

/// Where the filter partitions and partition index end: the index block's
/// offset, the footer's first field.
fn index_offset(file: &[u8]) -> usize {
    let footer = &file[file.len() - footer::FOOTER_LEN..];
    u64::from_le_bytes(footer[..8].try_into().unwrap()) as usize
}
