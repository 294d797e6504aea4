//! `sift`: the command line of the Sift key-value store.
//!
//! Every subcommand opens the database named by `--db`, does one thing and
//! closes it. Data goes to standard output (text, or JSON with `--json`);
//! progress bars and errors go to standard error. An error is one line and
//! an exit code: 1 not found, 2 usage, 3 corruption or I/O.

mod cli;
mod commands;
mod demo;
mod error;
mod output;
mod progress;
mod report;

use std::process::ExitCode;

use clap::Parser;

use cli::Cli;
use error::Kind;
use output::Output;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut out = Output::new(cli.json, cli.hex);
    let ran = commands::run(
        &cli.db,
        cli.server.as_deref(),
        cli.token_file.as_deref(),
        cli.command,
        &mut out,
    );
    // Flushed even after a failure: `verify` prints its problems, then fails.
    let flushed = out.finish();
    match ran.and(flushed) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            if failure.kind != Kind::PipeClosed {
                eprintln!("error: {failure}");
            }
            failure.kind.exit_code()
        }
    }
}
