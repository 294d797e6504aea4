//! Value indexes through the database: definitions across reopen and their
//! conflicts, leaves in flushed and compacted tables, and the backfill.

use std::sync::Arc;

use sift_filter::{Filter, KeyHash};

use super::leaves;
use crate::error::Error;
use crate::fs::FaultInjectionFs;
use crate::sstable::ValueLeaf;
use crate::value_def::{Extractor, IndexDef};
use crate::{Db, DbBuilder};

fn builder(fs: &FaultInjectionFs) -> DbBuilder {
    Db::builder("/db")
        .file_system(Arc::new(fs.clone()))
        .memtable_bytes(16 << 10)
        .table_target_bytes(16 << 10)
        .background_threads(false)
}

fn city() -> IndexDef {
    IndexDef::new("city", Extractor::json_field("/city"))
}

/// Every space-separated word of field `words` (read without a JSON parser).
fn words() -> IndexDef {
    IndexDef::new(
        "words",
        Extractor::custom("words", |v, out| {
            let text = String::from_utf8_lossy(v);
            if let Some(rest) = text.split(r#""words":""#).nth(1) {
                let field = rest.split('"').next().unwrap_or_default();
                field.split(' ').for_each(|w| out(w.as_bytes()));
            }
        }),
    )
}

/// `{"city":"c<i % 50>","words":"w<i> x<i>"}` for key `k<i>`.
fn fill(db: &Db, from: u32, to: u32) {
    for i in from..to {
        let value = format!(r#"{{"city":"c{}","words":"w{i} x{i}"}}"#, i % 50);
        db.insert(format!("k{i:05}"), value).unwrap();
    }
}

fn invalid(result: crate::Result<Db>) -> String {
    match result {
        Err(Error::InvalidArgument(detail)) => detail,
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

/// Per index name: (tables with a leaf, missing, unreadable).
fn coverage(db: &Db) -> Vec<(String, usize, usize, usize)> {
    db.indexes()
        .into_iter()
        .map(|i| {
            (
                i.name,
                i.tables_indexed,
                i.tables_missing,
                i.tables_unreadable,
            )
        })
        .collect()
}

#[test]
fn definitions_persist_across_reopen() {
    let fs = FaultInjectionFs::new();
    let db = builder(&fs).value_index(city()).open().unwrap();
    db.add_index(IndexDef::new("col", Extractor::delimited(1, b' ')).leaf_bits(4096))
        .unwrap();
    let before = db.indexes();
    assert_eq!(before.len(), 2);
    assert_eq!(before[0].extractor, "json /city");
    assert!(matches!(before[1].leaf_sizing, crate::LeafSizing::Fixed(s) if s.bits == 4096));
    assert_ne!(before[0].id, before[1].id);
    drop(db);
    // Declared or not, a stored (non-custom) index comes back unchanged.
    for reopened in [builder(&fs), builder(&fs).value_index(city())] {
        let db = reopened.open().unwrap();
        assert_eq!(db.indexes(), before);
        drop(db);
    }
    // A name in use cannot be added again.
    let db = builder(&fs).open().unwrap();
    assert!(matches!(
        db.add_index(city()),
        Err(Error::InvalidArgument(d)) if d.contains("already exists")
    ));
}

#[test]
fn conflicting_definitions_are_refused_at_open() {
    let fs = FaultInjectionFs::new();
    drop(
        builder(&fs)
            .value_index(city().leaf_bits(1 << 12))
            .open()
            .unwrap(),
    );
    let detail = invalid(
        builder(&fs)
            .value_index(IndexDef::new("city", Extractor::json_field("/town")))
            .open(),
    );
    assert!(
        detail.contains("\"city\"") && detail.contains("json /town"),
        "{detail}"
    );
    let detail = invalid(builder(&fs).value_index(city().leaf_bits(1 << 13)).open());
    assert!(detail.contains("leaf bits 8192"), "{detail}");
    let detail = invalid(builder(&fs).value_index(city().leaf_probes(60)).open());
    assert!(detail.contains("probes"), "{detail}");
    let detail = invalid(builder(&fs).value_index(city()).value_index(city()).open());
    assert!(detail.contains("twice"), "{detail}");
    builder(&fs)
        .value_index(city().leaf_bits(1 << 12))
        .open()
        .unwrap();
}

#[test]
fn a_custom_index_must_be_declared_again() {
    let fs = FaultInjectionFs::new();
    let db = builder(&fs).open().unwrap();
    db.add_index(words()).unwrap();
    drop(db);
    let detail = invalid(builder(&fs).open());
    assert!(
        detail.contains("\"words\"") && detail.contains("declare"),
        "{detail}"
    );
    let other = IndexDef::new("words", Extractor::custom("other", |_, _| {}));
    let detail = invalid(builder(&fs).value_index(other).open());
    assert!(detail.contains("custom \"other\""), "{detail}");
    let db = builder(&fs).value_index(words()).open().unwrap();
    assert_eq!(db.indexes()[0].name, "words");
}

#[test]
fn dropped_indexes_are_gone_and_a_new_one_starts_over() {
    let fs = FaultInjectionFs::new();
    let db = builder(&fs).value_index(city()).open().unwrap();
    fill(&db, 0, 100);
    db.flush().unwrap();
    let old_id = db.indexes()[0].id;
    assert_eq!(db.find_keys("city", b"Paris").unwrap().count(), 0);
    let states = || db.inner.value_leaves.len();
    assert_eq!(states(), 1);
    db.drop_index("city").unwrap();
    assert!(db.indexes().is_empty());
    // Its search structures go with it.
    assert_eq!(states(), 0);
    assert!(matches!(
        db.drop_index("city"),
        Err(Error::InvalidArgument(_))
    ));
    drop(db);
    let db = builder(&fs).open().unwrap();
    assert!(db.indexes().is_empty());
    db.add_index(city()).unwrap();
    let info = &db.indexes()[0];
    assert_ne!(info.id, old_id, "ids are never reused");
    // The tables' leaves belong to the dropped index, not the new one.
    let tables = db.stats().levels.iter().map(|l| l.tables).sum::<usize>();
    assert!(tables >= 1);
    assert_eq!((info.tables_indexed, info.tables_missing), (0, tables));
}

#[test]
fn flushed_and_compacted_tables_carry_leaves_with_every_value() {
    let fs = FaultInjectionFs::new();
    // Two words per entry: more values than the default shape assumes.
    let words = words().leaf_bits(1 << 14);
    let db = builder(&fs)
        .value_index(city())
        .value_index(words)
        .open()
        .unwrap();
    fill(&db, 0, 600);
    db.remove("k00003").unwrap();
    db.flush().unwrap();
    fill(&db, 600, 1200);
    db.flush().unwrap();
    for round in ["flushed", "compacted"] {
        let version = Arc::clone(&db.inner.current().version);
        assert!(version.tables().count() >= 2, "{round}");
        for index in db.inner.indexes().iter() {
            let leaves = leaves(&version, index);
            let probes = |value: String| {
                let hash = KeyHash::of(value.as_bytes());
                leaves.iter().any(|(_, leaf)| match leaf {
                    ValueLeaf::Present(leaf) => leaf.may_contain(hash),
                    _ => panic!("{round}: every leaf is present"),
                })
            };
            for i in 0..1200u32 {
                let value = match index.name.as_str() {
                    "city" => format!("c{}", i % 50),
                    _ => format!("{}{i}", ["w", "x"][i as usize % 2]),
                };
                if i == 3 {
                    continue; // removed before the compaction
                }
                assert!(probes(value), "{round}: {} lost value of k{i}", index.name);
            }
            for (_, leaf) in &leaves {
                let ValueLeaf::Present(leaf) = leaf else {
                    continue;
                };
                let strays = (0..1000)
                    .filter(|i| leaf.may_contain(KeyHash::of(format!("absent{i}").as_bytes())))
                    .count();
                assert!(strays < 50, "{round}: {strays} false positives in 1000");
            }
        }
        db.compact().unwrap();
    }
    assert_eq!(coverage(&db).iter().map(|c| c.2).sum::<usize>(), 0);
}

#[test]
fn backfill_gives_every_table_its_leaf_and_keeps_the_newest_versions() {
    let fs = FaultInjectionFs::new();
    let db = builder(&fs).open().unwrap();
    // One table in level 1, then three level-0 runs; key "same" is
    // overwritten in each.
    for round in 0..4u32 {
        fill(&db, round * 100, round * 100 + 100);
        db.insert("same", format!(r#"{{"city":"round{round}"}}"#))
            .unwrap();
        db.flush().unwrap();
        if round == 0 {
            db.compact().unwrap();
        }
    }
    assert_eq!(db.inner.current().version.l0_runs(), 3);
    let tables = db.inner.current().version.tables().count();
    db.add_index(city()).unwrap();
    assert_eq!(coverage(&db), [("city".into(), 0, tables, 0)]);
    db.wait_for_backfill().unwrap();
    assert_eq!(coverage(&db), [("city".into(), tables, 0, 0)]);
    let check = |db: &Db| {
        assert_eq!(
            db.get("same").unwrap().as_deref(),
            Some(&br#"{"city":"round3"}"#[..])
        );
        assert_eq!(db.range::<&[u8], _>(..).count(), 401);
    };
    check(&db);
    drop(db);
    // Recovery replays the rewrites after newer runs: order still holds.
    let db = builder(&fs).open().unwrap();
    check(&db);
    assert_eq!(coverage(&db), [("city".into(), tables, 0, 0)]);
}

#[test]
fn the_background_thread_backfills() {
    let fs = FaultInjectionFs::new();
    let db = builder(&fs).background_threads(true).open().unwrap();
    fill(&db, 0, 500);
    db.flush().unwrap();
    db.add_index(words()).unwrap();
    db.wait_for_backfill().unwrap();
    let (_, indexed, missing, _) = coverage(&db).remove(0);
    assert!(indexed > 0 && missing == 0);
}

#[test]
fn a_search_never_waits_for_another_index() {
    let fs = FaultInjectionFs::new();
    let db = Arc::new(
        builder(&fs)
            .value_index(city())
            .value_index(words())
            .open()
            .unwrap(),
    );
    fill(&db, 0, 500);
    db.flush().unwrap();
    // Hold the city index's structures, as a long calibration would.
    let city = db.inner.index_named("city").unwrap();
    let held = db.inner.value_leaves.of(&city);
    let guard = crate::db::lock(&held);
    let (done, finished) = std::sync::mpsc::channel();
    let searcher = Arc::clone(&db);
    let thread = std::thread::spawn(move || {
        let found = searcher.find_keys("words", "w7").map(Iterator::count);
        let _ = done.send(found);
    });
    // A wait would hang until the guard drops: a minute is far beyond any
    // search of 500 records on a loaded machine.
    let found = finished.recv_timeout(std::time::Duration::from_secs(60));
    drop(guard);
    let found = found.expect("the search waited for the other index");
    assert_eq!(found.unwrap(), 1);
    thread.join().unwrap();
    // The held index still answers once released.
    assert_eq!(db.find_keys("city", "c7").unwrap().count(), 10);
}
