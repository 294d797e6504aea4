//! stub
/// stub
pub fn run(
    _args: &crate::cli::DumpSstArgs,
    _out: &mut crate::output::Output,
) -> crate::error::Outcome {
    Err(crate::error::Failure::usage("not built yet"))
}
