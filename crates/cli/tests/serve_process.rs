//! `sift serve` as an operator runs it: it logs its elections with a
//! timestamp, and with `--token-file` the `sift --server` commands need the
//! same token.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on any error, like the #[test] fns clippy already exempts"
)]

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const PATIENCE: Duration = Duration::from_secs(30);

fn sift() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sift"));
    command.env_remove("SIFT_TOKEN_FILE");
    command
}

fn free_addr() -> String {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("127.0.0.1:{port}")
}

/// A node on `addr` with `extra` arguments, its standard error piped.
fn serve(addr: &str, dir: &Path, extra: &[&str]) -> Child {
    sift()
        .args([
            "serve",
            "--id",
            "1",
            "--listen",
            addr,
            "--heartbeat-ms",
            "100",
        ])
        .args(extra)
        .arg("--db")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The lines `child` writes to standard error, as they come.
fn stderr_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let stderr = child.stderr.take().unwrap();
    let (send, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            if send.send(line.unwrap()).is_err() {
                return;
            }
        }
    });
    lines
}

/// `sift --server addr ARGS`, retried while the node is not up yet.
fn remote(addr: &str, args: &[&str], token_file: Option<&Path>) -> Output {
    let start = Instant::now();
    loop {
        let mut command = sift();
        command.args(["--server", addr]).args(args);
        if let Some(file) = token_file {
            command.arg("--token-file").arg(file);
        }
        let output = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !stderr.contains("Connection refused") && !stderr.contains("error sending") {
            return output;
        }
        assert!(start.elapsed() < PATIENCE, "the node never came up");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_node_logs_that_it_became_the_leader_with_a_timestamp() {
    let root = tempfile::tempdir().unwrap();
    let addr = free_addr();
    let mut node = serve(&addr, &root.path().join("n1"), &[]);
    let lines = stderr_lines(&mut node);
    let members = format!("1={addr}");
    let init = remote(&addr, &["cluster", "init", "--members", &members], None);
    assert!(init.status.success(), "{}", stderr(&init));
    let mut seen = Vec::new();
    let deadline = Instant::now() + PATIENCE;
    let leader = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = lines
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no leader logged: {seen:#?}"));
        if line.contains("node 1 became the leader in term") {
            break line;
        }
        seen.push(line);
    };
    // `2026-01-02T03:04:05.678Z sift: node 1 became the leader in term 1`
    let (time, said) = leader.split_once(' ').unwrap();
    assert!(said.starts_with("sift: "), "{leader}");
    assert_eq!(time.len(), 24, "{leader}");
    assert!(
        time.ends_with('Z') && time.as_bytes()[10] == b'T',
        "{leader}"
    );
    assert!(
        seen.iter().any(|l| l.contains("no --token-file")),
        "{seen:#?}"
    );
    node.kill().unwrap();
    node.wait().unwrap();
}

/// A file holding `contents`, with permissions `mode`.
fn token_file(dir: &Path, name: &str, contents: &str, mode: u32) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

#[test]
fn with_a_token_file_the_commands_need_the_same_token() {
    let root = tempfile::tempdir().unwrap();
    let token = token_file(root.path(), "token", "s3cret\n", 0o600);
    let wrong = token_file(root.path(), "wrong", "guess", 0o600);
    let addr = free_addr();
    let token_arg = token.to_str().unwrap();
    let mut node = serve(&addr, &root.path().join("n1"), &["--token-file", token_arg]);
    let members = format!("1={addr}");
    let init = ["cluster", "init", "--members", &members];

    let without = remote(&addr, &init, None);
    assert_eq!(without.status.code(), Some(2), "{}", stderr(&without));
    assert!(
        stderr(&without).contains("unauthorized"),
        "{}",
        stderr(&without)
    );
    let guessed = remote(&addr, &init, Some(&wrong));
    assert_eq!(guessed.status.code(), Some(2));
    assert!(
        stderr(&guessed).contains("not this node's"),
        "{}",
        stderr(&guessed)
    );

    let formed = remote(&addr, &init, Some(&token));
    assert!(formed.status.success(), "{}", stderr(&formed));
    let put = remote(&addr, &["put", "k", "v"], Some(&token));
    assert!(put.status.success(), "{}", stderr(&put));
    // From the environment too.
    let got = sift()
        .args(["--server", &addr, "get", "k"])
        .env("SIFT_TOKEN_FILE", &token)
        .output()
        .unwrap();
    assert!(got.status.success(), "{}", stderr(&got));
    assert_eq!(String::from_utf8_lossy(&got.stdout).trim(), "v");
    let refused = remote(&addr, &["get", "k"], None);
    assert_eq!(refused.status.code(), Some(2));
    node.kill().unwrap();
    node.wait().unwrap();

    // A token file every user may read, or an empty one, is refused.
    let open = token_file(root.path(), "open", "s3cret", 0o644);
    let empty = token_file(root.path(), "empty", " \n", 0o600);
    for (file, why) in [(&open, "chmod 600"), (&empty, "empty")] {
        let refused = sift()
            .args([
                "serve",
                "--id",
                "1",
                "--listen",
                &free_addr(),
                "--token-file",
            ])
            .arg(file)
            .arg("--db")
            .arg(root.path().join("n2"))
            .output()
            .unwrap();
        assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
        assert!(stderr(&refused).contains(why), "{}", stderr(&refused));
    }
}
