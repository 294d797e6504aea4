//! stub
/// stub
pub fn run(
    _db: &std::path::Path,
    _command: crate::cli::IndexCommand,
    _out: &mut crate::output::Output,
) -> crate::error::Outcome {
    Err(crate::error::Failure::usage("not built yet"))
}
