//! STUB — to be replaced. File names of a database directory.
use super::FileKind;
/// The lock file.
pub(crate) const LOCK: &str = "LOCK";
/// The pointer to the live manifest.
pub(crate) const CURRENT: &str = "CURRENT";
/// WAL file name.
pub(crate) fn wal(number: u64) -> String {
    format!("{number:06}.wal")
}
/// Table file name.
pub(crate) fn table(number: u64) -> String {
    format!("{number:06}.sst")
}
/// Manifest file name.
pub(crate) fn manifest(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}
/// What a file name names.
pub(crate) fn parse(name: &str) -> Option<FileKind> {
    todo!()
}
