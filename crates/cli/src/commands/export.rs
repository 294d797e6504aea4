//! stub
/// stub
pub fn run(
    _db: &std::path::Path,
    _args: &crate::cli::ExportArgs,
    _out: &mut crate::output::Output,
) -> crate::error::Outcome {
    Err(crate::error::Failure::usage("not built yet"))
}
