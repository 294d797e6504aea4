//! `CURRENT`: the name of the live manifest, replaced atomically.
//!
//! Contents: the manifest's file name, a newline, the checksum of the name
//! as eight lowercase hex digits, a newline (`MANIFEST-000002\n1a2b3c4d\n`).
//! It stays readable with `cat`, and a damaged name cannot silently point
//! at another manifest.

use std::io;
use std::path::Path;

use super::FileKind;
use super::filenames::{self, CURRENT};
use crate::encoding::{checksum, checksum_matches};
use crate::error::{Error, Result};
use crate::fs::{FileSystem, read_all};

/// Longest CURRENT accepted: `MANIFEST-` and a 20-digit number, a newline,
/// 8 hex digits, a newline. Anything longer is not Sift's.
const MAX_CURRENT_LEN: usize = 9 + 20 + 1 + 8 + 1;

/// The contents of CURRENT naming `manifest`.
fn encode_current(manifest: &str) -> String {
    format!("{manifest}\n{:08x}\n", checksum(manifest.as_bytes()))
}

/// Points CURRENT at `manifest` atomically and durably: writes and syncs
/// `CURRENT.tmp` ([`filenames::temp`]), makes the directory's new names durable (the manifest's
/// and the temporary's), renames over CURRENT, and syncs the directory
/// again. A crash at any point leaves CURRENT naming either the old
/// manifest or the new one.
pub(crate) fn write_current(fs: &dyn FileSystem, dir: &Path, manifest: &str) -> Result<()> {
    let temp = dir.join(filenames::temp(CURRENT));
    let current = dir.join(CURRENT);
    let mut file = fs.create(&temp).map_err(|e| Error::io(&temp, e))?;
    file.append(encode_current(manifest).as_bytes())
        .map_err(|e| Error::io(&temp, e))?;
    file.sync().map_err(|e| Error::io(&temp, e))?;
    drop(file);
    // The rename must not become durable before the manifest's own name.
    fs.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
    fs.rename(&temp, &current)
        .map_err(|e| Error::io(&current, e))?;
    fs.sync_dir(dir).map_err(|e| Error::io(dir, e))
}

/// Which manifest CURRENT names; `None` when there is no CURRENT (a new
/// database). Anything but the exact format is [`Error::Corruption`]
/// naming CURRENT.
pub(crate) fn read_current(fs: &dyn FileSystem, dir: &Path) -> Result<Option<String>> {
    let path = dir.join(CURRENT);
    let bytes = match read_all(fs, &path, MAX_CURRENT_LEN as u64) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) if err.kind() == io::ErrorKind::InvalidData => {
            return Err(Error::corruption(&path, 0, err.to_string()));
        }
        Err(err) => return Err(Error::io(&path, err)),
    };
    parse_current(&bytes)
        .map(Some)
        .map_err(|(offset, detail)| Error::corruption(&path, offset, detail))
}

/// The manifest name in CURRENT's bytes, or the offset and nature of the
/// damage.
fn parse_current(bytes: &[u8]) -> Result<String, (u64, String)> {
    if bytes.len() > MAX_CURRENT_LEN {
        return Err((
            0,
            format!("{} bytes, more than CURRENT ever holds", bytes.len()),
        ));
    }
    let text =
        std::str::from_utf8(bytes).map_err(|e| (e.valid_up_to() as u64, "not UTF-8".to_owned()))?;
    let Some((name, rest)) = text.split_once('\n') else {
        return Err((
            bytes.len() as u64,
            "no newline after the manifest name".to_owned(),
        ));
    };
    let sum_at = name.len() as u64 + 1;
    let Some(hex) = rest.strip_suffix('\n').filter(|hex| hex.len() == 8) else {
        return Err((
            sum_at,
            "the checksum line is not 8 hex digits and a newline".to_owned(),
        ));
    };
    if !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err((sum_at, format!("checksum {hex:?} is not lowercase hex")));
    }
    let sum = u32::from_str_radix(hex, 16).map_err(|e| (sum_at, e.to_string()))?;
    if !checksum_matches(name.as_bytes(), sum) {
        return Err((0, format!("checksum mismatch for the name {name:?}")));
    }
    if !matches!(filenames::parse(name), Some(FileKind::Manifest(_))) {
        return Err((0, format!("{name:?} is not a manifest name")));
    }
    Ok(name.to_owned())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::fs::FaultInjectionFs;

    #[test]
    fn golden_and_round_trip() {
        let name = filenames::manifest(2);
        let text = encode_current(&name);
        assert_eq!(
            text,
            format!("MANIFEST-000002\n{:08x}\n", checksum(b"MANIFEST-000002"))
        );
        assert_eq!(parse_current(text.as_bytes()), Ok(name));
        assert!(text.len() <= MAX_CURRENT_LEN);
        assert_eq!(
            encode_current(&filenames::manifest(u64::MAX)).len(),
            MAX_CURRENT_LEN
        );
    }

    #[test]
    fn missing_current_is_a_new_database() {
        let fs = FaultInjectionFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        assert_eq!(read_current(&fs, dir).unwrap(), None);
        write_current(&fs, dir, "MANIFEST-000005").unwrap();
        assert_eq!(
            read_current(&fs, dir).unwrap().as_deref(),
            Some("MANIFEST-000005")
        );
        assert_eq!(fs.contents(&dir.join(filenames::temp(CURRENT))), None);
        // Durable: a power cut right after keeps it.
        assert_eq!(
            read_current(&fs.crash(), dir).unwrap().as_deref(),
            Some("MANIFEST-000005")
        );
    }

    #[test]
    fn every_damage_is_corruption_naming_current() {
        let fs = FaultInjectionFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        write_current(&fs, dir, "MANIFEST-000005").unwrap();
        let path = dir.join(CURRENT);
        let good = fs.contents(&path).unwrap();
        let mut damaged: Vec<Vec<u8>> = (0..good.len()).map(|len| good[..len].to_vec()).collect();
        for at in 0..good.len() {
            let mut bytes = good.clone();
            bytes[at] ^= 0x5a;
            damaged.push(bytes);
        }
        let mut long = good.clone();
        long.push(b'\n');
        damaged.extend([
            long,
            vec![0xff; 10],
            b"MANIFEST-000005\n".to_vec(),
            vec![b'x'; 1000],
        ]);
        let forged = encode_current("000005.sst");
        damaged.push(forged.into_bytes());
        for bytes in damaged {
            fs.set_contents(&path, bytes.clone()).unwrap();
            match read_current(&fs, dir) {
                Err(Error::Corruption { path: p, .. }) => assert_eq!(p, path),
                other => panic!("{bytes:?}: {other:?}"),
            }
        }
    }

    /// An oversized CURRENT is refused by its size, before it is read.
    #[test]
    fn an_oversized_current_is_not_read() {
        let fs = FaultInjectionFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        write_current(&fs, dir, "MANIFEST-000005").unwrap();
        let path = dir.join(CURRENT);
        fs.set_contents(&path, vec![b'x'; 100_000]).unwrap();
        fs.inject(crate::fs::FaultOp::Read, CURRENT, 1);
        match read_current(&fs, dir) {
            Err(Error::Corruption { detail, .. }) => assert!(detail.contains("100000 bytes")),
            other => panic!("{other:?}"),
        }
    }

    proptest! {
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..50)) {
            let _ = parse_current(&bytes);
        }
    }
}
