//! `sift-bench stress` end to end, briefly: a few children killed with
//! `SIGKILL` within seconds, each followed by a reopen and a full check.
//! The CI runs it for 60 s (`.ci/run`).

#![cfg(unix)]

use std::process::Command;

#[test]
fn a_short_stress_run_with_kills_finds_no_divergence() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let run = dir.path().join("run");
    let output = Command::new(env!("CARGO_BIN_EXE_sift-bench"))
        .args(["stress", "--seconds", "4", "--threads", "2", "--json"])
        .args(["--min-kill-ms", "300", "--max-kill-ms", "900"])
        .args(["--keys-per-thread", "2000", "--seed", "7"])
        .arg("--dir")
        .arg(&run)
        .output()
        .unwrap_or_else(|e| panic!("cannot run sift-bench: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let field = |name: &str| {
        report[name]
            .as_u64()
            .unwrap_or_else(|| panic!("{name}: {report}"))
    };
    assert_eq!(field("divergences"), 0, "{report}");
    assert!(field("kills") + field("clean_exits") >= 2, "{report}");
    assert_eq!(
        field("reopens"),
        field("kills") + field("clean_exits"),
        "{report}"
    );
    assert!(field("ops") > 0 && field("keys_checked") > 0, "{report}");
}
