//! File names of a database directory, and [`parse`], which recognises
//! exactly the names Sift writes.
//!
//! Numbers are zero-padded to six digits and grow past six when they must
//! (`1234567.sst`); a parsed name must be the one Sift would write for its
//! number, so `1.sst`, `0000001.sst` or `+00001.wal` are not Sift's.

use super::FileKind;

/// The lock file.
pub(crate) const LOCK: &str = "LOCK";
/// The pointer to the live manifest.
pub(crate) const CURRENT: &str = "CURRENT";
/// Suffix of a temporary file: a file being written that becomes `name`
/// by a rename.
const TEMP_SUFFIX: &str = ".tmp";

/// WAL file name.
pub(crate) fn wal(number: u64) -> String {
    format!("{number:06}.wal")
}

/// Where point-in-time recovery keeps WAL `number` when it stopped in or
/// before it: records it could not replay are never deleted. No open
/// reads, replays or removes such a file.
pub(crate) fn damaged_wal(number: u64) -> String {
    format!("{}.damaged", wal(number))
}

/// Table file name.
pub(crate) fn table(number: u64) -> String {
    format!("{number:06}.sst")
}

/// Manifest file name.
pub(crate) fn manifest(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

/// The temporary name under which `name` is written before a rename.
pub(crate) fn temp(name: &str) -> String {
    format!("{name}{TEMP_SUFFIX}")
}

/// The number in `digits` if `render(number)` gives back exactly `name`.
fn number(digits: &str, name: &str, render: fn(u64) -> String) -> Option<u64> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let number: u64 = digits.parse().ok()?;
    (render(number) == name).then_some(number)
}

/// What a file name names; `None` for anything Sift does not write.
pub(crate) fn parse(name: &str) -> Option<FileKind> {
    if let Some(base) = name.strip_suffix(TEMP_SUFFIX) {
        // A temporary copy of one of Sift's own files (never of LOCK).
        return match parse(base)? {
            FileKind::Lock | FileKind::Temp => None,
            _ => Some(FileKind::Temp),
        };
    }
    match name {
        LOCK => return Some(FileKind::Lock),
        CURRENT => return Some(FileKind::Current),
        _ => {}
    }
    if let Some(digits) = name.strip_prefix("MANIFEST-") {
        return number(digits, name, manifest).map(FileKind::Manifest);
    }
    if let Some(digits) = name.strip_suffix(".wal") {
        return number(digits, name, wal).map(FileKind::Wal);
    }
    if let Some(digits) = name.strip_suffix(".sst") {
        return number(digits, name, table).map(FileKind::Table);
    }
    None
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn names_and_their_kinds() {
        assert_eq!(wal(7), "000007.wal");
        assert_eq!(table(1_234_567), "1234567.sst");
        assert_eq!(manifest(42), "MANIFEST-000042");
        assert_eq!(parse("000007.wal"), Some(FileKind::Wal(7)));
        assert_eq!(parse("1234567.sst"), Some(FileKind::Table(1_234_567)));
        assert_eq!(parse("MANIFEST-000042"), Some(FileKind::Manifest(42)));
        assert_eq!(parse(&table(u64::MAX)), Some(FileKind::Table(u64::MAX)));
        assert_eq!(parse("LOCK"), Some(FileKind::Lock));
        assert_eq!(parse("CURRENT"), Some(FileKind::Current));
        assert_eq!(parse(&temp(CURRENT)), Some(FileKind::Temp));
        assert_eq!(temp(CURRENT), "CURRENT.tmp");
        assert_eq!(parse(&temp(&table(3))), Some(FileKind::Temp));
        assert_eq!(parse(&temp(&manifest(3))), Some(FileKind::Temp));
    }

    #[test]
    fn look_alikes_are_not_sift_files() {
        for name in [
            "",
            "1.wal",
            "00007.wal",
            "0000007.wal",
            "+00007.wal",
            "-00007.wal",
            " 000007.wal",
            "000007.wal ",
            "00000a.wal",
            "000007.WAL",
            "000007.log",
            "000007.sst.bak",
            ".sst",
            "000007",
            "MANIFEST-",
            "MANIFEST-42",
            "MANIFEST-0000042",
            "manifest-000042",
            "MANIFEST-000042.tmp.tmp",
            "CURRENT.TMP",
            "LOCK.tmp",
            "current",
            "CURRENT\n",
            ".tmp",
            "tmp",
            "x.tmp",
            "18446744073709551616.sst",
            "000001.wal\0",
        ] {
            assert_eq!(parse(name), None, "{name:?}");
        }
    }

    proptest! {
        #[test]
        fn numbers_round_trip(n in any::<u64>()) {
            prop_assert_eq!(parse(&wal(n)), Some(FileKind::Wal(n)));
            prop_assert_eq!(parse(&table(n)), Some(FileKind::Table(n)));
            prop_assert_eq!(parse(&manifest(n)), Some(FileKind::Manifest(n)));
            prop_assert_eq!(parse(&temp(&wal(n))), Some(FileKind::Temp));
        }

        #[test]
        fn parse_never_panics_and_only_accepts_canonical_names(name in "\\PC{0,24}") {
            match parse(&name) {
                Some(FileKind::Wal(n)) => prop_assert_eq!(wal(n), name),
                Some(FileKind::Table(n)) => prop_assert_eq!(table(n), name),
                Some(FileKind::Manifest(n)) => prop_assert_eq!(manifest(n), name),
                _ => {}
            }
        }
    }
}
