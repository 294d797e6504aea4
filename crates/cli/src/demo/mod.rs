//! `sift demo`: loads a deterministic data set and shows what Sift's
//! filters do with it.

use crate::error::Outcome;
use crate::output::Output;

/// Options of `sift demo`.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Records to load.
    #[arg(long, default_value_t = 1_000_000)]
    pub records: u64,
}

/// Runs the demo.
pub fn run(_args: &DemoArgs, _out: &mut Output) -> Outcome {
    Err(crate::error::Failure::usage("the demo is not built yet"))
}
