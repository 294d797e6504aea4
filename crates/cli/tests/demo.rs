#![expect(clippy::unwrap_used, clippy::panic, reason = "tests fail loudly")]

//! `sift demo` end to end, at a small size: it exits 0, its JSON lines
//! parse, and the figures it reports are consistent (lookups find exactly
//! the present keys, every search by value agrees with a full scan, a
//! value no record has reads no table).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use assert_cmd::Command;
use serde_json::Value;

/// Records loaded by each run: enough for a few tens of tables (the demo
/// sizes its tables to the data set), quick in a debug build.
const RECORDS: &str = "20000";

/// A run that takes longer has hung (each takes a few seconds): fail
/// instead of blocking the test suite.
const TIMEOUT: Duration = Duration::from_secs(120);

fn sift() -> Command {
    let mut command = Command::cargo_bin("sift").unwrap();
    command.timeout(TIMEOUT);
    command
}

/// Runs the demo with `--json` into `dir`; returns its sections by name.
fn demo_json(dir: &Path, extra: &[&str]) -> BTreeMap<String, Value> {
    let output = sift()
        .args(["demo", "--json", "--records", RECORDS, "--dir"])
        .arg(dir)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "demo failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut sections = BTreeMap::new();
    for line in String::from_utf8(output.stdout).unwrap().lines() {
        let object: serde_json::Map<String, Value> = serde_json::from_str(line).unwrap();
        assert_eq!(object.len(), 1, "one section per line: {line}");
        let (name, body) = object.into_iter().next().unwrap();
        assert!(
            sections.insert(name.clone(), body).is_none(),
            "{name} twice"
        );
    }
    sections
}

fn u64_at(value: &Value, pointer: &str) -> u64 {
    value
        .pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no {pointer} in {value}"))
}

#[test]
fn the_json_report_is_complete_and_consistent() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("demo");
    let sections = demo_json(&dir, &[]);
    let names: Vec<&str> = sections.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "demo", "indexes", "levels", "load", "lookups", "ranges", "searches", "summary"
        ]
    );
    assert_eq!(u64_at(&sections["load"], "/records"), 20_000);
    for index in ["booking", "origin"] {
        let synced = &sections["load"]["index_sync_seconds"][index];
        assert!(
            synced.as_f64().is_some_and(|s| s >= 0.0),
            "{index}: {synced}"
        );
    }
    let tables = u64_at(&sections["load"], "/tables");
    assert!(
        tables >= 10,
        "{tables} tables: too few for the filters to show"
    );

    // Both indexes cover every table.
    for index in sections["indexes"].as_array().unwrap() {
        assert_eq!(u64_at(index, "/tables_indexed"), tables, "{index}");
    }

    // Present keys are all found, missing keys never, and the missing ones
    // are answered by the filters: almost no data block is read.
    let lookups = sections["lookups"].as_array().unwrap();
    let (present, missing) = (&lookups[0], &lookups[1]);
    assert_eq!(present["keys"], "present");
    assert_eq!(u64_at(present, "/found"), u64_at(present, "/lookups"));
    assert!(u64_at(present, "/lookups") > 0);
    assert_eq!(missing["keys"], "missing");
    assert_eq!(u64_at(missing, "/found"), 0);
    let missing_lookups = u64_at(missing, "/lookups");
    assert!(
        u64_at(missing, "/data_blocks_read") * 20 < missing_lookups,
        "{missing}"
    );
    assert!(
        u64_at(missing, "/filter_negatives") * 10 > missing_lookups * 9,
        "{missing}"
    );

    // Range scans return records.
    for range in sections["ranges"].as_array().unwrap() {
        assert!(
            u64_at(range, "/records") >= u64_at(range, "/scans"),
            "{range}"
        );
    }

    // Every search agrees with the full scan, which reads every table.
    let searches = sections["searches"].as_array().unwrap();
    assert_eq!(searches.len(), 5);
    for search in searches {
        assert_eq!(u64_at(search, "/tables"), tables);
        assert_eq!(
            u64_at(search, "/filtered/results"),
            u64_at(search, "/scan/results"),
            "{search}"
        );
        assert_eq!(search["scan"]["method"], "scan");
        assert_eq!(u64_at(search, "/scan/tables_scanned"), tables);
        assert!(u64_at(search, "/filtered/tables_scanned") <= tables);
    }
    let find = |index: &str, kind: &str| {
        searches
            .iter()
            .find(|s| s["index"] == index && s["kind"].as_str().unwrap().contains(kind))
            .unwrap()
    };
    // A booking is in one table; the filters read only that one.
    let booking = find("booking", "party");
    assert!(u64_at(booking, "/results") >= 1);
    assert_eq!(u64_at(booking, "/filtered/tables_scanned"), 1);
    // A value no record has reads no table.
    let absent = find("origin", "not in the data");
    assert_eq!(absent["value"], "LHR");
    assert_eq!(u64_at(absent, "/results"), 0);
    assert_eq!(u64_at(absent, "/filtered/tables_scanned"), 0);
    // The busiest airport has results.
    assert!(u64_at(find("origin", "busiest"), "/results") > 100);

    // The level table counts the lookups' probes.
    let probes: u64 = sections["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|level| u64_at(level, "/filter_probes"))
        .sum();
    assert!(probes >= u64_at(missing, "/filter_probes"));

    // Without --keep the database is gone.
    assert_eq!(sections["summary"]["kept"], false);
    assert!(!dir.exists());
}

#[test]
fn keep_leaves_the_database_and_the_next_run_replaces_it() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("demo");
    let output = sift()
        .args(["demo", "--records", "5000", "--keep", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    for heading in [
        "== 1. Load",
        "== 2. Key lookups",
        "== 3. Range scans",
        "== 4. Search by value",
        "== 5. Filters per level",
    ] {
        assert!(text.contains(heading), "{heading} missing from:\n{text}");
    }
    assert!(text.contains("was kept"));
    assert!(dir.join("CURRENT").is_file());
    assert!(dir.join("SIFT-DEMO").is_file());

    // A second run recognises its own directory, wipes it and loads afresh.
    let sections = demo_json(&dir, &["--keep"]);
    assert_eq!(u64_at(&sections["load"], "/records"), 20_000);
    assert!(dir.join("CURRENT").is_file());
}

#[test]
fn a_directory_it_did_not_write_is_refused_and_left_alone() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("notes.txt"), "mine").unwrap();
    let output = sift()
        .args(["demo", "--records", "1000", "--dir"])
        .arg(root.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("not a demo database"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("notes.txt")).unwrap(),
        "mine"
    );
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 1);
}

#[test]
fn records_must_be_positive() {
    let output = sift().args(["demo", "--records", "0"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
}
