//! A node's own small files, written through siftdb's [`FileSystem`] like
//! its databases, so a test's lying disk sees every byte a node writes.
//!
//! The state machine and the snapshots each keep a `CURRENT` file naming
//! their live generation or snapshot by number; it is replaced by a rename,
//! so a crash leaves the old number or the new one.

use std::io;
use std::path::Path;
use std::sync::Arc;

use siftdb::fs::FileSystem;

/// The file system a node's files live in.
pub(crate) type Fs = Arc<dyn FileSystem>;

/// The largest `CURRENT` or snapshot metadata file read: anything longer
/// is damage, not ours.
const MAX_SMALL_FILE_BYTES: u64 = 1 << 20;

/// Writes `bytes` to a new file `path` and syncs it (the name is made
/// durable by a later [`FileSystem::sync_dir`]).
pub(crate) fn write_synced(fs: &dyn FileSystem, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = fs.create(path)?;
    file.append(bytes)?;
    file.sync()
}

/// A small file whole: `CURRENT` or a snapshot's metadata.
pub(crate) fn read_small(fs: &dyn FileSystem, path: &Path) -> io::Result<Vec<u8>> {
    siftdb::fs::read_all(fs, path, MAX_SMALL_FILE_BYTES)
}

/// The number `dir/CURRENT` names, if there is one.
pub(crate) fn read_current(fs: &dyn FileSystem, dir: &Path) -> io::Result<Option<u64>> {
    match read_small(fs, &dir.join("CURRENT")) {
        Ok(bytes) => std::str::from_utf8(&bytes)
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .map(Some)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: CURRENT is not a number", dir.display()),
                )
            }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Makes `dir/CURRENT` name `n`, atomically and durably.
pub(crate) fn set_current(fs: &dyn FileSystem, dir: &Path, n: u64) -> io::Result<()> {
    let temp = dir.join("CURRENT.tmp");
    write_synced(fs, &temp, n.to_string().as_bytes())?;
    fs.rename(&temp, &dir.join("CURRENT"))?;
    fs.sync_dir(dir)
}

/// Whether `path` is a directory (it can be listed).
pub(crate) fn is_dir(fs: &dyn FileSystem, path: &Path) -> bool {
    fs.list(path).is_ok()
}

/// Deletes `path`, a file or a directory tree.
pub(crate) fn remove(fs: &dyn FileSystem, path: &Path) -> io::Result<()> {
    if is_dir(fs, path) {
        siftdb::fs::remove_dir_all(fs, path)
    } else {
        fs.remove(path)
    }
}

#[cfg(test)]
mod tests {
    use siftdb::fs::FaultInjectionFs;

    use super::*;

    #[test]
    fn current_is_replaced_atomically_and_damage_is_an_error() {
        let fs = FaultInjectionFs::new();
        let dir = Path::new("/node/sm");
        fs.create_dir_all(dir).unwrap();
        assert_eq!(read_current(&fs, dir).unwrap(), None);
        set_current(&fs, dir, 7).unwrap();
        set_current(&fs, dir, 8).unwrap();
        assert_eq!(read_current(&fs, dir).unwrap(), Some(8));
        assert_eq!(read_current(&fs.crash(), dir).unwrap(), Some(8));
        fs.set_contents(&dir.join("CURRENT"), b"x8".to_vec())
            .unwrap();
        let err = read_current(&fs, dir).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn remove_takes_files_and_trees() {
        let fs = FaultInjectionFs::new();
        let dir = Path::new("/node");
        fs.create_dir_all(&dir.join("tree/sub")).unwrap();
        write_synced(&fs, &dir.join("tree/sub/f"), b"1").unwrap();
        write_synced(&fs, &dir.join("file"), b"2").unwrap();
        remove(&fs, &dir.join("tree")).unwrap();
        remove(&fs, &dir.join("file")).unwrap();
        assert!(fs.list(dir).unwrap().is_empty());
    }
}
