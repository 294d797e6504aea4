//! One module per subcommand; [`run`] dispatches.

mod compact;
mod dump_sst;
mod export;
mod find;
mod import;
mod index;
mod kv;
mod remote;
mod scan;
mod serve;
mod stats;
mod verify;

use std::path::Path;

use siftdb::Db;

use crate::cli::Command;
use crate::error::{Failure, Outcome};
use crate::output::Output;

/// Runs `command` on the database at `db`, or through the cluster node
/// `server`; `token_file` holds the cluster's token (sent to `server`, or
/// required by `serve`).
pub fn run(
    db: &Path,
    server: Option<&str>,
    token_file: Option<&Path>,
    command: Command,
    out: &mut Output,
) -> Outcome {
    // Read only where it is used: a local command ignores it.
    let token = || token_file.map(remote::read_token).transpose();
    if let Some(server) = server {
        return remote::run(server, token()?, command, out);
    }
    match command {
        Command::Put { key, value } => kv::put(db, &key, &value, out),
        Command::Get { key } => kv::get(db, &key, out),
        Command::Delete { key } => kv::delete(db, &key, out),
        Command::Scan(args) => scan::run(db, &args, out),
        Command::Find(args) => find::run(db, &args, out),
        Command::Import(args) => import::run(db, &args, out),
        Command::Export(args) => export::run(db, &args, out),
        Command::Index(command) => index::run(db, command, out),
        Command::Stats(args) => stats::run(db, &args, out),
        Command::Verify => verify::run(db, out),
        Command::DumpSst(args) => dump_sst::run(&args, out),
        Command::Compact => compact::run(db, out),
        Command::Demo(args) => crate::demo::run(&args, out),
        Command::Serve(args) => serve::run(db, &args, token()?),
        Command::Cluster(_) => Err(Failure::usage("cluster commands need --server HOST:PORT")),
    }
}

/// Opens the database at `path`, creating it if needed (commands that write).
pub fn open_or_create(path: &Path) -> Outcome<Db> {
    let db = Db::open(path)?;
    // Point-in-time recovery opened a damaged WAL as of the records before
    // the damage: say so, where it cannot be mistaken for output.
    if let Some(dropped) = db.stats().wal_recovery {
        eprintln!(
            "warning: WAL recovery dropped records (the damaged WAL is kept as \
             NNNNNN.wal.damaged): {dropped}"
        );
    }
    Ok(db)
}

/// Opens the database at `path`, which must exist (commands that
/// maintain: a mistyped `--db` is an error, not a new empty database).
pub fn open_existing(path: &Path) -> Outcome<Db> {
    require_database(path)?;
    open_or_create(path)
}

/// Opens the database at `path`, which must exist, read-only (commands
/// that only read): nothing in the directory is written, a damaged WAL is
/// left as it is, and a database another process holds opens too.
pub fn open_for_reading(path: &Path) -> Outcome<Db> {
    require_database(path)?;
    let db = Db::builder(path).read_only(true).open()?;
    if let Some(dropped) = db.stats().wal_recovery {
        eprintln!(
            "warning: WAL recovery dropped records (read as of the records before the \
             damage; the WAL is left as it is): {dropped}"
        );
    }
    Ok(db)
}

/// [`Failure::usage`] unless `path` holds a database.
fn require_database(path: &Path) -> Outcome {
    if path.join("CURRENT").is_file() {
        Ok(())
    } else {
        Err(Failure::usage(format!(
            "no Sift database at {} (give --db, or create one with put or import)",
            path.display()
        )))
    }
}
