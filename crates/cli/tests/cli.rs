//! The `sift` binary run for real on temporary databases: every
//! subcommand, its `--json` output parsed, and each error's exit code.

#![expect(clippy::unwrap_used, reason = "a test fails by panicking")]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

/// A temporary database directory and the `sift` command pointed at it.
struct Sift {
    dir: TempDir,
}

/// What one run printed and how it exited.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Standard output as one JSON value per line.
    fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    /// Asserts success and returns standard output.
    fn ok(self) -> String {
        assert_eq!(self.code, 0, "stderr: {}", self.stderr);
        self.stdout
    }

    /// Asserts exit code `code` with a one-line error and no Rust panic output.
    fn fails_with(self, code: i32) -> String {
        assert_eq!(
            self.code, code,
            "stdout: {} stderr: {}",
            self.stdout, self.stderr
        );
        let error = self.stderr.trim_end();
        assert!(
            !error.contains("panicked") && !error.contains("RUST_BACKTRACE"),
            "{error}"
        );
        error.to_owned()
    }
}

impl Sift {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("db")
    }

    /// Runs `sift --db <db> args...`.
    fn run(&self, args: &[&str]) -> Run {
        self.run_in(&self.db(), args)
    }

    /// Runs `sift --db <db> args...` on another database.
    fn run_in(&self, db: &Path, args: &[&str]) -> Run {
        let output = Command::cargo_bin("sift")
            .unwrap()
            .arg("--db")
            .arg(db)
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .unwrap();
        Run {
            code: output.status.code().unwrap(),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }

    /// Writes `text` to a file in the temporary directory.
    fn file(&self, name: &str, text: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    }

    /// Imports [`FLIGHTS_CSV`] keyed by `id`, with `extra` arguments.
    fn import_flights(&self, extra: &[&str]) -> Run {
        let csv = self.file("flights.csv", FLIGHTS_CSV);
        let mut args = vec!["import", &csv, "--format", "csv", "--key", "id"];
        args.extend_from_slice(extra);
        self.run(&args)
    }

    /// Makes the database a crash image: the files of a database copied
    /// while it is open, after synced writes of `entries`, so the WAL still
    /// holds them (closing would flush it).
    fn crash_image(&self, entries: impl IntoIterator<Item = (String, String)>) {
        let live = self.dir.path().join("live");
        let db = siftdb::Db::builder(&live).sync_writes(true).open().unwrap();
        for (key, value) in entries {
            db.insert(key, value).unwrap();
        }
        std::fs::create_dir(self.db()).unwrap();
        for entry in std::fs::read_dir(&live).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(&path, self.db().join(path.file_name().unwrap())).unwrap();
        }
        drop(db);
    }

    /// Files of the database whose name ends with `suffix`.
    fn files(&self, suffix: &str) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.db())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.to_str().unwrap().ends_with(suffix))
            .collect();
        files.sort();
        files
    }
}

const FLIGHTS_CSV: &str = "\
id,origin,dest,carrier
1,SFO,JFK,UA
2,LAX,SFO,AA
3,SFO,ORD,UA
4,JFK,LAX,DL
";

#[test]
fn put_get_delete_round_trip() {
    let sift = Sift::new();
    sift.run(&["put", "user/1", "ada"]).ok();
    assert_eq!(sift.run(&["get", "user/1"]).ok(), "ada\n");
    let json = sift.run(&["--json", "get", "user/1"]).json_lines();
    assert_eq!(json, [serde_json::json!({"key": "user/1", "value": "ada"})]);
    sift.run(&["delete", "user/1"]).ok();
    let error = sift.run(&["get", "user/1"]).fails_with(1);
    assert_eq!(error, "error: key user/1 not found");
    // Deleting an absent key is not an error.
    sift.run(&["delete", "user/1"]).ok();
}

#[test]
fn hex_keys_and_values_carry_binary_data() {
    let sift = Sift::new();
    sift.run(&["--hex", "put", "00ff", "deadbeef"]).ok();
    assert_eq!(sift.run(&["--hex", "get", "00ff"]).ok(), "deadbeef\n");
    // Without --hex, bytes that are not UTF-8 are escaped, not lost.
    assert_eq!(
        sift.run(&["scan"]).ok(),
        "\\x00\\xff\t\\xde\\xad\\xbe\\xef\n"
    );
    let error = sift.run(&["--hex", "get", "zz"]).fails_with(2);
    assert!(error.contains("not hex"), "{error}");
}

#[test]
fn scan_by_prefix_range_direction_and_limit() {
    let sift = Sift::new();
    for key in ["a/1", "a/2", "a/3", "b/1", "c/1"] {
        sift.run(&["put", key, &key.to_uppercase()]).ok();
    }
    let keys = |args: &[&str]| {
        let mut all = vec!["--json", "scan", "--keys-only"];
        all.extend_from_slice(args);
        sift.run(&all)
            .json_lines()
            .iter()
            .map(|line| line["key"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(&[]), ["a/1", "a/2", "a/3", "b/1", "c/1"]);
    assert_eq!(keys(&["--prefix", "a/"]), ["a/1", "a/2", "a/3"]);
    assert_eq!(
        keys(&["--from", "a/2", "--to", "c/1"]),
        ["a/2", "a/3", "b/1"]
    );
    assert_eq!(keys(&["--reverse", "--limit", "2"]), ["c/1", "b/1"]);
    assert_eq!(
        keys(&["--prefix", "a/", "--reverse"]),
        ["a/3", "a/2", "a/1"]
    );
    assert_eq!(sift.run(&["scan", "--prefix", "b/"]).ok(), "b/1\tB/1\n");
    sift.run(&["scan", "--prefix", "a", "--from", "b"])
        .fails_with(2);
}

#[test]
fn import_csv_then_find_with_explain() {
    let sift = Sift::new();
    let imported = sift.import_flights(&["--index", "origin=origin", "--json"]);
    assert_eq!(imported.json_lines()[0]["imported"], 4);
    let lines = sift
        .run(&["--json", "find", "--index", "origin", "SFO", "--explain"])
        .json_lines();
    let keys: Vec<&str> = lines[..2]
        .iter()
        .map(|l| l["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["1", "3"]);
    let record: Value = serde_json::from_str(lines[0]["value"].as_str().unwrap()).unwrap();
    assert_eq!(record["dest"], "JFK");
    let explain = &lines[2]["explain"];
    assert_eq!(explain["results"], 2);
    assert!(explain["tables"].as_u64().unwrap() >= 1);
    // Every method finds the same entries.
    for method in ["scan", "bloom-scan", "hierarchy", "flat"] {
        let out = sift.run(&[
            "find",
            "--index",
            "origin",
            "SFO",
            "--keys-only",
            "--method",
            method,
        ]);
        assert_eq!(out.ok(), "1\n3\n", "{method}");
    }
    // Nothing found, an unknown index: exit 1.
    let error = sift
        .run(&["find", "--index", "origin", "BOS"])
        .fails_with(1);
    assert!(error.contains("BOS"), "{error}");
    sift.run(&["find", "--index", "nope", "SFO"]).fails_with(1);
}

#[test]
fn import_jsonl_with_a_composite_key_and_a_nested_field() {
    let sift = Sift::new();
    let jsonl = sift.file(
        "users.jsonl",
        "{\"team\":\"red\",\"id\":7,\"address\":{\"city\":\"Oslo\"}}\n\n\
         {\"team\":\"blue\",\"id\":8,\"address\":{\"city\":\"Lima\"}}\n",
    );
    sift.run(&[
        "import",
        &jsonl,
        "--format",
        "jsonl",
        "--key",
        "team,id",
        "--index",
        "city=/address/city",
    ])
    .ok();
    assert_eq!(sift.run(&["scan", "--keys-only"]).ok(), "blue/8\nred/7\n");
    assert_eq!(
        sift.run(&["find", "--index", "city", "Oslo", "--keys-only"])
            .ok(),
        "red/7\n"
    );
}

#[test]
fn import_stops_at_a_bad_record_naming_its_line() {
    let sift = Sift::new();
    let jsonl = sift.file(
        "bad.jsonl",
        "{\"id\":1}\n{\"id\":2}\nnot json\n{\"id\":4}\n",
    );
    let error = sift
        .run(&["import", &jsonl, "--format", "jsonl", "--key", "id"])
        .fails_with(2);
    assert!(
        error.contains("line 3") && error.contains("2 records before it"),
        "{error}"
    );
    assert_eq!(sift.run(&["scan", "--keys-only"]).ok(), "1\n2\n");

    let missing_key = sift.file("nokey.jsonl", "{\"name\":\"x\"}\n");
    let error = sift
        .run(&["import", &missing_key, "--format", "jsonl", "--key", "id"])
        .fails_with(2);
    assert!(error.contains("no key column \"id\""), "{error}");
    let csv = sift.file("ragged.csv", "id,a\n1,x\n2\n");
    sift.run(&["import", &csv, "--format", "csv", "--key", "id"])
        .fails_with(2);
    sift.run(&["import", "absent.csv", "--format", "csv", "--key", "id"])
        .fails_with(3);
    let error = sift.import_flights(&["--index", "origin"]).fails_with(2);
    assert!(error.contains("NAME=COLUMN"), "{error}");
}

#[test]
fn export_then_import_round_trips_binary_data() {
    let sift = Sift::new();
    sift.run(&["--hex", "put", "00", "ff00"]).ok();
    sift.run(&["--hex", "put", "01", ""]).ok();
    sift.run(&["put", "text", "a,\"b\"\nc"]).ok();
    for format in ["jsonl", "csv"] {
        let file = sift.dir.path().join(format!("dump.{format}"));
        let file = file.to_str().unwrap();
        sift.run(&["--hex", "export", "--format", format, "-o", file])
            .ok();
        let copy = sift.dir.path().join(format!("copy-{format}"));
        let load = [
            "--hex", "import", file, "--format", format, "--key", "key", "--value", "value",
        ];
        sift.run_in(&copy, &load).ok();
        let original = sift.run(&["--hex", "scan"]).ok();
        assert_eq!(
            sift.run_in(&copy, &["--hex", "scan"]).ok(),
            original,
            "{format}"
        );
    }
}

#[test]
fn index_add_list_drop() {
    let sift = Sift::new();
    sift.import_flights(&[]).ok();
    let added = sift.run(&["--json", "index", "add", "carrier", "--field", "carrier"]);
    let added = &added.json_lines()[0]["added"];
    assert_eq!(added["extractor"], "json /carrier");
    assert_eq!(added["tables_missing"], 0);
    assert_eq!(
        sift.run(&["find", "--index", "carrier", "UA", "--keys-only"])
            .ok(),
        "1\n3\n"
    );
    let listed = sift.run(&["--json", "index", "list"]).json_lines();
    assert_eq!(listed[0]["indexes"][0]["name"], "carrier");
    sift.run(&["index", "add", "carrier", "--field", "dest"])
        .fails_with(2);
    sift.run(&["index", "add", "nothing"]).fails_with(2);
    sift.run(&["index", "add", "sep", "--column", "1", "--separator", "::"])
        .fails_with(2);
    sift.run(&["index", "drop", "carrier"]).ok();
    sift.run(&["index", "drop", "carrier"]).fails_with(1);
    assert_eq!(
        sift.run(&["--json", "index", "list"]).json_lines()[0]["indexes"],
        Value::Array(vec![])
    );
}

#[test]
fn stats_report_levels_filters_and_indexes() {
    let sift = Sift::new();
    sift.import_flights(&["--index", "o=origin"]).ok();
    let stats = &sift.run(&["--json", "stats"]).json_lines()[0];
    assert_eq!(stats["entries"], 4);
    let level = &stats["levels"][0];
    assert_eq!(level["filter_kind"], "blocked_bloom");
    assert!(level["filter_bits_per_key"].as_f64().unwrap() > 0.0);
    assert!(stats["absent_keys_probed"].as_u64().unwrap() > 0);
    assert_eq!(stats["indexes"][0]["name"], "o");
    let text = sift.run(&["stats"]).ok();
    assert!(
        text.contains("key filter") && text.contains("json /origin"),
        "{text}"
    );
}

#[test]
fn compact_and_dump_sst() {
    let sift = Sift::new();
    for i in 0..50 {
        sift.run(&["put", &format!("k{i:02}"), "v"]).ok();
    }
    let compacted = &sift.run(&["--json", "compact"]).json_lines()[0];
    // Compaction may move tables whose key ranges do not overlap instead of
    // rewriting them, so the last level can hold several.
    let tables = compacted["tables"].as_u64().unwrap();
    assert!(tables >= 1 && tables <= compacted["tables_before"].as_u64().unwrap());
    let stats = &sift.run(&["--json", "stats"]).json_lines()[0];
    assert_eq!(stats["levels"].as_array().unwrap().len(), 1, "{stats}");
    let mut keys = Vec::new();
    for table in sift.files(".sst") {
        let table = table.to_str().unwrap();
        let dump = sift.run(&["--json", "dump-sst", table]).json_lines();
        let entries = dump[0]["properties"]["entries"].as_u64().unwrap();
        assert_eq!(dump.len() as u64, 1 + entries);
        keys.extend(
            dump[1..]
                .iter()
                .map(|e| e["key"].as_str().unwrap().to_owned()),
        );
        let summary = sift.run(&["dump-sst", table, "--summary"]).ok();
        assert!(
            summary.contains(&format!("entries       {entries} (")),
            "{summary}"
        );
    }
    keys.sort();
    let expected: Vec<String> = (0..50).map(|i| format!("k{i:02}")).collect();
    assert_eq!(keys, expected);
    let not_a_table = sift.file("junk.sst", "not a table at all");
    sift.run(&["dump-sst", &not_a_table]).fails_with(3);
}

#[test]
fn usage_errors_exit_2() {
    let sift = Sift::new();
    sift.run(&["put", "only-a-key"]).fails_with(2);
    sift.run(&["frobnicate"]).fails_with(2);
    // Reading a database that does not exist is a mistyped --db, not a new database.
    let error = sift.run(&["get", "k"]).fails_with(2);
    assert!(error.contains("no Sift database"), "{error}");
    assert!(!sift.db().exists());
    // A key longer than the store allows.
    let long_key = "k".repeat(64 * 1024 + 1);
    sift.run(&["put", &long_key, "v"]).fails_with(2);
    // A node's settings out of range, refused before it starts.
    let serve = ["serve", "--id", "1", "--listen", "127.0.0.1:0"];
    let error = sift
        .run(&[&serve[..], &["--snapshot-every", "0"]].concat())
        .fails_with(2);
    assert!(error.contains("--snapshot-every"), "{error}");
    let error = sift
        .run(&[&serve[..], &["--heartbeat-ms", "0"]].concat())
        .fails_with(2);
    assert!(error.contains("--heartbeat-ms"), "{error}");
    let error = sift
        .run(&[&serve[..], &["--memtable-mib", "0"]].concat())
        .fails_with(2);
    assert!(error.contains("--memtable-mib"), "{error}");
    let error = sift
        .run(&[&serve[..], &["--cache-mib", "18446744073709551615"]].concat())
        .fails_with(2);
    assert!(error.contains("--cache-mib"), "{error}");
}

#[test]
fn a_database_held_open_elsewhere_is_read_but_not_written() {
    let sift = Sift::new();
    sift.run(&["put", "k", "v"]).ok();
    let _held = siftdb::Db::open(sift.db()).unwrap();
    assert_eq!(sift.run(&["get", "k"]).ok(), "v\n");
    let error = sift.run(&["put", "k", "w"]).fails_with(3);
    assert!(error.contains("locked"), "{error}");
}

/// Every file of the database and its bytes.
fn snapshot(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect()
}

/// Every open recovered and flushed, so a read command on a database with
/// a damaged WAL replaced the WAL, and the valid records after the damage
/// were gone for good. No read command writes now; a writing one keeps
/// the damaged WAL aside.
#[test]
fn read_commands_never_write_and_a_damaged_wal_is_kept() {
    let sift = Sift::new();
    sift.crash_image((0..200).map(|i| (format!("key{i:03}"), "value".repeat(8))));
    let wal = sift.files(".wal").pop().unwrap();
    let mut bytes = std::fs::read(&wal).unwrap();
    let middle = bytes.len() / 2;
    for b in &mut bytes[middle..middle + 4] {
        *b ^= 0xff;
    }
    std::fs::write(&wal, &bytes).unwrap();
    let before = snapshot(&sift.db());
    let out = sift.file("out.jsonl", "");
    let reads: [&[&str]; 6] = [
        &["stats"],
        &["get", "key001"],
        &["scan"],
        &["export", "-o", &out],
        &["index", "list"],
        &["--json", "stats"],
    ];
    for args in reads {
        let run = sift.run(args);
        assert!(
            run.stderr.contains("WAL recovery dropped records"),
            "{args:?}: {}",
            run.stderr
        );
        run.ok();
        assert!(
            snapshot(&sift.db()) == before,
            "sift {args:?} changed the database"
        );
    }
    sift.run(&["put", "new", "v"]).ok();
    let name = wal.file_name().unwrap().to_str().unwrap();
    let kept = sift.db().join(format!("{name}.damaged"));
    assert_eq!(
        std::fs::read(kept).unwrap(),
        bytes,
        "the damaged WAL was not kept"
    );
}

#[test]
fn verify_passes_a_clean_database() {
    let sift = Sift::new();
    sift.import_flights(&["--index", "o=origin"]).ok();
    let report = &sift.run(&["--json", "verify"]).json_lines()[0];
    assert_eq!(report["problems"], Value::Array(vec![]));
    assert!(report["tables"].as_u64().unwrap() >= 1);
    sift.run_in(&sift.dir.path().join("absent"), &["verify"])
        .fails_with(2);
}

#[test]
fn verify_finds_a_flipped_byte_in_a_table() {
    let sift = Sift::new();
    for i in 0..20 {
        sift.run(&["put", &format!("key{i:02}"), &"v".repeat(100)])
            .ok();
    }
    sift.run(&["compact"]).ok();
    let table = sift.files(".sst").pop().unwrap();
    // The first data block starts the file.
    let mut bytes = std::fs::read(&table).unwrap();
    bytes[10] ^= 0x5a;
    std::fs::write(&table, bytes).unwrap();
    let run = sift.run(&["verify"]);
    let out = run.stdout.clone();
    run.fails_with(3);
    let name = table.file_name().unwrap().to_str().unwrap();
    let problem = out.lines().find(|l| l.starts_with("problem:")).unwrap();
    assert!(
        problem.contains(name) && problem.contains("at offset 0"),
        "{out}"
    );
}

#[test]
fn verify_finds_a_flipped_byte_in_a_wal() {
    let sift = Sift::new();
    sift.crash_image((0..5).map(|i| (format!("key{i}"), "value".to_owned())));
    let wal = sift.files(".wal").pop().unwrap();
    // Inside the first of five records: not a torn tail but damage.
    let mut bytes = std::fs::read(&wal).unwrap();
    bytes[24] ^= 0x5a;
    std::fs::write(&wal, bytes).unwrap();
    let run = sift.run(&["--json", "verify"]);
    let report = run.json_lines();
    run.fails_with(3);
    let problem = &report[0]["problems"][0];
    assert!(
        problem["file"].as_str().unwrap().ends_with(".wal"),
        "{problem}"
    );
    assert!(problem["offset"].as_u64().is_some(), "{problem}");
    // Point-in-time recovery (the default) opens it as of the records
    // before the damage, and says so.
    let error = sift.run(&["get", "key4"]).fails_with(1);
    assert!(error.contains("WAL recovery dropped records"), "{error}");
}

/// A store's every key and value, as `key<TAB>value` hex lines: what a
/// round trip must reproduce byte for byte.
fn hex_entries(sift: &Sift, db: &Path) -> String {
    sift.run_in(db, &["--hex", "scan"]).ok()
}

#[test]
fn export_refuses_bytes_that_are_not_utf8_unless_hex() {
    let sift = Sift::new();
    // The binary key ff, and the four characters `\xff` as text: plain
    // export used to write both as "\\xff", and import kept one of them.
    sift.run(&["--hex", "put", "ff", "01"]).ok();
    sift.run(&["put", "\\xff", "literal"]).ok();
    let dump = sift.file("dump.jsonl", "an older dump\n");
    for format in ["jsonl", "csv"] {
        let error = sift
            .run(&["export", "--format", format, "-o", &dump])
            .fails_with(2);
        assert!(
            error.contains("not UTF-8") && error.contains("--hex"),
            "{error}"
        );
        let error = sift.run(&["export", "--format", format]).fails_with(2);
        assert!(error.contains("--hex"), "{error}");
    }
    // A refused export leaves the file it would have replaced as it was.
    assert_eq!(std::fs::read_to_string(&dump).unwrap(), "an older dump\n");
    // And no half-written file beside it.
    let names: Vec<_> = std::fs::read_dir(sift.dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n.to_str().unwrap().contains("sift-export")),
        "{names:?}"
    );
}

#[test]
fn export_then_import_round_trips_binary_data_and_backslashes_exactly() {
    let sift = Sift::new();
    sift.run(&["--hex", "put", "ff", "01"]).ok();
    sift.run(&["--hex", "put", "00ff80", "fffe00"]).ok();
    sift.run(&["--hex", "put", "62696e", ""]).ok();
    sift.run(&["put", "\\xff", "literal"]).ok();
    sift.run(&["put", "path", "C:\\new\\x41 \"q\",\\\\"]).ok();
    let original = hex_entries(&sift, &sift.db());
    assert_eq!(original.lines().count(), 5, "{original}");
    for format in ["jsonl", "csv"] {
        let file = sift.dir.path().join(format!("dump.{format}"));
        let file = file.to_str().unwrap();
        sift.run(&["--hex", "export", "--format", format, "-o", file])
            .ok();
        let copy = sift.dir.path().join(format!("copy-{format}"));
        let load = [
            "--hex", "import", file, "--format", format, "--key", "key", "--value", "value",
        ];
        sift.run_in(&copy, &load).ok();
        assert_eq!(hex_entries(&sift, &copy), original, "{format}");
    }
}

#[test]
fn export_then_import_round_trips_text_with_backslashes_without_hex() {
    let sift = Sift::new();
    sift.run(&["put", "\\xff", "literal"]).ok();
    sift.run(&["put", "path", "C:\\new\\x41 \"q\",\\\\"]).ok();
    sift.run(&["put", "ünï", "cödé\t\n"]).ok();
    let original = hex_entries(&sift, &sift.db());
    for format in ["jsonl", "csv"] {
        let file = sift.dir.path().join(format!("text.{format}"));
        let file = file.to_str().unwrap();
        sift.run(&["export", "--format", format, "-o", file]).ok();
        let copy = sift.dir.path().join(format!("text-{format}"));
        let load = [
            "import", file, "--format", format, "--key", "key", "--value", "value",
        ];
        sift.run_in(&copy, &load).ok();
        assert_eq!(hex_entries(&sift, &copy), original, "{format}");
    }
}

#[test]
fn export_refuses_an_output_inside_the_database() {
    let sift = Sift::new();
    for i in 0..20 {
        sift.run(&["put", &format!("key{i:02}"), "value"]).ok();
    }
    sift.run(&["compact"]).ok();
    let table = sift.files(".sst").pop().unwrap();
    let before = std::fs::read(&table).unwrap();
    let link = sift.dir.path().join("link");
    std::os::unix::fs::symlink(sift.db(), &link).unwrap();
    let inside = [
        table.clone(),
        sift.db().join("CURRENT"),
        sift.db().join("dump.jsonl"),
        sift.db().join("..").join("db").join("new.jsonl"),
        link.join(table.file_name().unwrap()),
        link.join("new.jsonl"),
    ];
    for path in &inside {
        let error = sift
            .run(&["export", "-o", path.to_str().unwrap()])
            .fails_with(2);
        assert!(error.contains("inside the database"), "{error}");
    }
    assert_eq!(std::fs::read(&table).unwrap(), before);
    assert!(!sift.db().join("dump.jsonl").exists());
    assert!(!sift.db().join("new.jsonl").exists());
    sift.run(&["verify"]).ok();
    // Next to the database is fine.
    sift.run(&["export", "-o", "dump.jsonl"]).ok();
    let dump = std::fs::read_to_string(sift.dir.path().join("dump.jsonl")).unwrap();
    assert_eq!(dump.lines().count(), 20);
}

#[test]
fn import_reports_the_keys_its_records_overwrote() {
    let sift = Sift::new();
    sift.run(&["put", "2", "stored before"]).ok();
    // Batches of 3: [1, 2, 1] overwrites key 2 (stored before) and key 1
    // (earlier in the batch); [3, 3] overwrites key 3.
    let csv = sift.file("dups.csv", "id,v\n1,a\n2,b\n1,c\n3,d\n3,e\n");
    let args = ["import", &csv, "--format", "csv", "--key", "id"];
    let run = sift.run(&[&args[..], &["--batch", "3", "--json"]].concat());
    let report = &run.json_lines()[0];
    assert_eq!(report["imported"], 5, "{report}");
    assert_eq!(report["new_keys"], 2, "{report}");
    assert_eq!(report["overwritten"], 3, "{report}");
    // Batches of 2: [1, 2] [1, 3] [3], overwrites across batches.
    let text = sift.run(&[&args[..], &["--batch", "2"]].concat()).ok();
    assert!(
        text.contains("5 records") && text.contains("0 new keys") && text.contains("5 overwrote"),
        "{text}"
    );
    assert_eq!(sift.run(&["scan", "--keys-only"]).ok(), "1\n2\n3\n");
}

#[test]
fn an_inverted_scan_range_and_find_limit_0_are_usage_errors() {
    let sift = Sift::new();
    sift.import_flights(&["--index", "origin=origin"]).ok();
    let error = sift
        .run(&["scan", "--from", "3", "--to", "1"])
        .fails_with(2);
    assert!(
        error.contains("--from") && error.contains("--to"),
        "{error}"
    );
    sift.run(&["scan", "--reverse", "--from", "3", "--to", "1"])
        .fails_with(2);
    // An empty range that is not inverted is no error.
    assert_eq!(sift.run(&["scan", "--from", "2", "--to", "2"]).ok(), "");
    let error = sift
        .run(&["find", "--index", "origin", "SFO", "--limit", "0"])
        .fails_with(2);
    assert!(error.contains("--limit"), "{error}");
    assert_eq!(
        sift.run(&[
            "find",
            "--index",
            "origin",
            "SFO",
            "--limit",
            "1",
            "--keys-only"
        ])
        .ok(),
        "1\n"
    );
}

#[test]
fn import_warns_of_an_index_on_a_column_no_record_has() {
    let sift = Sift::new();
    let run = sift.import_flights(&["--index", "x=nosuchcol", "--index", "o=origin"]);
    let stderr = run.stderr.clone();
    run.ok();
    assert!(
        stderr.contains("warning") && stderr.contains("x=nosuchcol"),
        "{stderr}"
    );
    assert!(!stderr.contains("o=origin"), "{stderr}");
    let jsonl = sift.file(
        "nested.jsonl",
        "{\"id\":1,\"a\":{\"b\":\"x\"}}\n{\"id\":2}\n",
    );
    let args = ["import", &jsonl, "--format", "jsonl", "--key", "id"];
    let run = sift.run(&[&args[..], &["--index", "ab=/a/b", "--index", "ac=/a/c"]].concat());
    let stderr = run.stderr.clone();
    run.ok();
    assert!(stderr.contains("ac=/a/c"), "{stderr}");
    assert!(!stderr.contains("ab=/a/b"), "{stderr}");
}
