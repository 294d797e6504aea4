//! `--dir`: where the engine benchmarks make their databases.

use anyhow::Context;

/// The scratch-directory option shared by the benchmarks that write databases.
#[derive(clap::Args, Debug)]
pub struct ScratchDir {
    /// Directory for the databases (default: the system's temporary directory).
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
}

impl ScratchDir {
    /// A fresh directory under `--dir` (or the system's temporary
    /// directory), deleted when dropped.
    pub fn create(&self) -> anyhow::Result<tempfile::TempDir> {
        let dir = match &self.dir {
            Some(parent) => tempfile::tempdir_in(parent),
            None => tempfile::tempdir(),
        };
        dir.context("cannot create a scratch directory")
    }
}
