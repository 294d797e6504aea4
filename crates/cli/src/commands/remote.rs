//! The commands that go through a cluster node (`--server`): put, get,
//! delete and scan through the leader, and `cluster`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;
use sift_raft::api::{ApiError, Status};
use sift_raft::{Client, ReadError, Token, WriteError};

use super::import::pointer;
use crate::cli::{ClusterCommand, ClusterIndexCommand, Command, FindMethod, ScanArgs};
use crate::error::{Failure, Outcome};
use crate::output::Output;

/// A runtime for one command.
pub fn runtime() -> Outcome<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::storage(format!("cannot start the async runtime: {e}")))
}

/// The cluster's token, from the file `--token-file` (or
/// `$SIFT_TOKEN_FILE`) names.
pub fn read_token(path: &std::path::Path) -> Outcome<Token> {
    Token::read_file(path).map_err(Failure::usage)
}

/// A cluster's error: whether it says the request itself was at fault.
pub trait ClusterError: std::fmt::Display {
    /// Whether the request was refused as invalid, or for its token.
    fn invalid(&self) -> bool;
}

impl ClusterError for ApiError {
    fn invalid(&self) -> bool {
        matches!(self, Self::Invalid(_) | Self::Unauthorized(_))
    }
}

impl ClusterError for WriteError {
    fn invalid(&self) -> bool {
        matches!(self, Self::Invalid(_) | Self::Unauthorized(_))
    }
}

impl ClusterError for ReadError {
    fn invalid(&self) -> bool {
        matches!(self, Self::Invalid(_) | Self::Unauthorized(_))
    }
}

/// A cluster's error as a command's failure: an invalid request, or one
/// refused for its token, is a usage error (exit 2), the rest storage
/// (exit 3).
pub fn failure(error: impl ClusterError) -> Failure {
    if error.invalid() {
        Failure::usage(error.to_string())
    } else {
        Failure::storage(error.to_string())
    }
}

/// Runs `command` through the node at `server`, sending `token`.
pub fn run(server: &str, token: Option<Token>, command: Command, out: &mut Output) -> Outcome {
    let client = match token {
        Some(token) => Client::new(server).with_token(token),
        None => Client::new(server),
    };
    let runtime = runtime()?;
    match command {
        Command::Put { key, value } => {
            let (key, value) = (out.parse("key", &key)?, out.parse("value", &value)?);
            runtime
                .block_on(client.put(&key, &value))
                .map_err(failure)?;
            Ok(())
        }
        Command::Get { key } => {
            let key = out.parse("key", &key)?;
            let value = runtime.block_on(client.get(&key)).map_err(failure)?;
            super::kv::print_found(&key, value, out)
        }
        Command::Delete { key } => {
            let key = out.parse("key", &key)?;
            runtime.block_on(client.delete(&key)).map_err(failure)?;
            Ok(())
        }
        Command::Scan(args) => scan(&runtime, &client, &args, out),
        Command::Find(args) => {
            if args.method != FindMethod::Auto || args.explain {
                return Err(Failure::usage(
                    "--method and --explain are not supported with --server",
                ));
            }
            let value = out.parse("value", &args.value)?;
            let limit = super::find::limit(&args)?;
            let found = runtime
                .block_on(client.find(&args.index, &value, limit))
                .map_err(failure)?;
            if found.is_empty() {
                return Err(Failure::not_found("no entry has that value"));
            }
            for entry in found {
                out.entry(&entry.key, (!args.keys_only).then_some(&entry.value[..]))?;
            }
            Ok(())
        }
        Command::Cluster(command) => cluster(&runtime, &client, command, out),
        _ => Err(Failure::usage(
            "with --server, only put, get, delete, scan, find and cluster are supported",
        )),
    }
}

/// `sift --server ADDR scan`: forward, by range or prefix.
fn scan(
    runtime: &tokio::runtime::Runtime,
    client: &Client,
    args: &ScanArgs,
    out: &mut Output,
) -> Outcome {
    if args.reverse {
        return Err(Failure::usage("--reverse is not supported with --server"));
    }
    let (lower, upper) = match out.parse_optional("--prefix", args.prefix.as_deref())? {
        Some(prefix) => {
            let upper = prefix_end(&prefix);
            (prefix, upper)
        }
        None => {
            let from = out.parse_optional("--from", args.from.as_deref())?;
            let to = out.parse_optional("--to", args.to.as_deref())?;
            super::scan::check_range(from.as_deref(), to.as_deref(), out)?;
            (from.unwrap_or_default(), to)
        }
    };
    // Page by page: a whole store is never held here, nor on a node.
    let mut pages = client.scan_pages(&lower, upper.as_deref(), args.limit.unwrap_or(usize::MAX));
    while let Some(page) = runtime.block_on(pages.next_page()).map_err(failure)? {
        for entry in page {
            out.entry(&entry.key, (!args.keys_only).then_some(&entry.value[..]))?;
        }
    }
    Ok(())
}

/// The first key after every key starting with `prefix` (`None`: no end).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// `sift --server ADDR cluster ...`.
fn cluster(
    runtime: &tokio::runtime::Runtime,
    client: &Client,
    command: ClusterCommand,
    out: &mut Output,
) -> Outcome {
    match command {
        ClusterCommand::Init { members } => {
            let members = parse_members(&members)?;
            runtime.block_on(client.init(&members)).map_err(failure)
        }
        ClusterCommand::Status => {
            let status = runtime.block_on(client.status()).map_err(failure)?;
            print_status(&status, out)
        }
        ClusterCommand::AddLearner { id, addr } => runtime
            .block_on(client.add_learner(id, &addr))
            .map_err(failure),
        ClusterCommand::ChangeMembership { voters } => {
            let voters: BTreeSet<u64> = voters.into_iter().collect();
            runtime
                .block_on(client.change_membership(&voters))
                .map_err(failure)
        }
        ClusterCommand::RemoveNode { id } => {
            runtime.block_on(client.remove_node(id)).map_err(failure)
        }
        ClusterCommand::Index(ClusterIndexCommand::Add { name, field }) => runtime
            .block_on(client.define_index(&name, &pointer(&field)))
            .map_err(failure),
        ClusterCommand::Index(ClusterIndexCommand::Drop { name }) => {
            runtime.block_on(client.drop_index(&name)).map_err(failure)
        }
    }
}

/// `ID=HOST:PORT` pairs.
fn parse_members(members: &[String]) -> Outcome<BTreeMap<u64, String>> {
    members
        .iter()
        .map(|member| {
            let (id, addr) = member
                .split_once('=')
                .ok_or_else(|| Failure::usage(format!("member {member:?} is not ID=HOST:PORT")))?;
            let id = id.parse::<u64>().ok().filter(|id| *id > 0).ok_or_else(|| {
                Failure::usage(format!("member id {id:?} is not a positive integer"))
            })?;
            Ok((id, addr.to_string()))
        })
        .collect()
}

/// The status as one JSON object, or as lines of text.
fn print_status(status: &Status, out: &mut Output) -> Outcome {
    if out.json {
        let value = json!({
            "id": status.id,
            "state": status.state,
            "leader": status.leader,
            "term": status.term,
            "members": status.members,
            "learners": status.learners,
            "last_log_index": status.last_log_index,
            "last_applied": status.last_applied,
            "snapshot": status.snapshot,
            "snapshot_transfers": status.snapshot_transfers,
        });
        return out.json_line(&value);
    }
    let show = |index: Option<u64>| index.map_or("-".to_string(), |i| i.to_string());
    out.line(format!(
        "node {} ({}), term {}",
        status.id, status.state, status.term
    ))?;
    out.line(format!(
        "leader: {}",
        status.leader.map_or("none".into(), |l| l.to_string())
    ))?;
    for (id, addr) in &status.members {
        out.line(format!("member {id} {addr}"))?;
    }
    for (id, addr) in &status.learners {
        out.line(format!("learner {id} {addr}"))?;
    }
    out.line(format!(
        "last log index {}, last applied {}, snapshot {} ({} transfers received)",
        show(status.last_log_index),
        show(status.last_applied),
        show(status.snapshot),
        status.snapshot_transfers
    ))
}
