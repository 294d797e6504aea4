//! Crash images: the states a disk may hold after a power cut, beyond the
//! sure one [`FaultInjectionFs::crash`] keeps.
//!
//! What a disk promises, and so all a test may assume, is POSIX's: synced
//! bytes of a file, and names as of its directory's last sync. Anything
//! else written may or may not have reached the platters, in any order,
//! page by page. An image keeps
//! - for each file: its synced bytes, then one of nothing, a prefix of the
//!   rest, all of the rest, or a subset of the rest's pages (a page not
//!   kept reads as zeros, as a block the file system allocated but never
//!   wrote);
//! - for each directory: its synced names, then each later creation,
//!   removal and rename independently done or not (a rename is atomic).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::{DirOp, FaultInjectionFs, Inode, InodeRef, lock};
use crate::rng::SplitMix64;

/// The unit a disk writes atomically, as in ALICE's model: torn writes
/// are cut at page boundaries, not byte by byte. Small, so that one WAL
/// record spans several.
pub const PAGE_BYTES: usize = 512;

impl FaultInjectionFs {
    /// One state a disk may hold after a power cut now, drawn by `seed`
    /// (the same seed, the same image). Seed 0 is the sure state
    /// ([`crash`](Self::crash)); other seeds keep more. `self` is
    /// unchanged, and later writes through it do not reach the image.
    #[must_use]
    pub fn crash_image(&self, seed: u64) -> Self {
        if seed == 0 {
            return self.crash();
        }
        // Images must be reproducible from their seed.
        let mut rng = SplitMix64(seed);
        let state = lock(&self.state);
        let mut names = state.durable_names.clone();
        for op in &state.pending {
            if !rng.one_in(2) {
                continue;
            }
            match op {
                DirOp::Link(path, inode) => {
                    names.insert(path.clone(), Arc::clone(inode));
                }
                DirOp::Unlink(path) => {
                    names.remove(path);
                }
                DirOp::Rename(from, to, inode) => {
                    names.remove(from);
                    names.insert(to.clone(), Arc::clone(inode));
                }
            }
        }
        // One draw per inode, shared by every name it has in the image.
        let mut drawn: BTreeMap<*const Mutex<Inode>, InodeRef> = BTreeMap::new();
        let names: BTreeMap<PathBuf, InodeRef> = names
            .into_iter()
            .map(|(path, inode)| {
                let image = drawn
                    .entry(Arc::as_ptr(&inode))
                    .or_insert_with(|| {
                        let data = kept_bytes(&lock(&inode), &mut rng);
                        let synced = data.len();
                        Arc::new(Mutex::new(Inode { data, synced }))
                    })
                    .clone();
                (path, image)
            })
            .collect();
        Self::from_names(names, state.dirs.clone())
    }
}

/// What survives of one file: its synced bytes and a draw of the rest.
fn kept_bytes(inode: &Inode, rng: &mut SplitMix64) -> Vec<u8> {
    let synced = inode.synced.min(inode.data.len());
    let (sure, rest) = inode.data.split_at(synced);
    let mut data = sure.to_vec();
    if rest.is_empty() {
        return data;
    }
    match rng.below(4) {
        0 => {}
        1 => data.extend_from_slice(&rest[..rng.below(rest.len() as u64 + 1) as usize]),
        2 => data.extend_from_slice(rest),
        _ => {
            // Pages are counted from the start of the file: a page the
            // synced part shares with the rest is written whole or not.
            let mut kept_end = synced;
            data.resize(inode.data.len(), 0);
            let first_page = synced / PAGE_BYTES;
            let last_page = (inode.data.len() - 1) / PAGE_BYTES;
            for page in first_page..=last_page {
                if rng.one_in(2) {
                    let start = (page * PAGE_BYTES).max(synced);
                    let end = ((page + 1) * PAGE_BYTES).min(inode.data.len());
                    data[start..end].copy_from_slice(&inode.data[start..end]);
                    kept_end = end;
                }
            }
            // The file's length reached the disk with the last page kept,
            // or (a coin) with the whole write.
            if rng.one_in(2) {
                data.truncate(kept_end);
            }
        }
    }
    data
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::fs::{FileSystem, WritableFile};

    fn setup() -> (FaultInjectionFs, Box<dyn WritableFile>) {
        let fs = FaultInjectionFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        let mut file = fs.create(&dir.join("log")).unwrap();
        file.append(&[1; 1000]).unwrap();
        file.sync().unwrap();
        fs.sync_dir(dir).unwrap();
        file.append(&[2; 3000]).unwrap();
        (fs, file)
    }

    #[test]
    fn images_keep_synced_bytes_and_draw_the_rest() {
        let (fs, _file) = setup();
        let path = Path::new("/db/log");
        let mut lengths = std::collections::BTreeSet::new();
        let mut holes = 0;
        for seed in 0..200 {
            let image = fs.crash_image(seed).contents(path).unwrap();
            assert_eq!(image[..1000], [1; 1000], "seed {seed}");
            assert!(image.len() <= 4000);
            // Every byte past the synced ones is what was written, or a
            // zero of a page that was not.
            assert!(image[1000..].iter().all(|&b| b == 2 || b == 0));
            holes += usize::from(image[1000..].contains(&0) && image.ends_with(&[2]));
            lengths.insert(image.len());
            assert_eq!(fs.crash_image(seed).contents(path).unwrap(), image);
        }
        assert_eq!(fs.crash_image(0).contents(path).unwrap().len(), 1000);
        assert!(lengths.contains(&1000) && lengths.contains(&4000));
        assert!(lengths.len() > 20, "{lengths:?}");
        assert!(
            holes > 0,
            "no image kept a later page but not an earlier one"
        );
    }

    #[test]
    fn unsynced_directory_operations_happen_or_not() {
        let (fs, _file) = setup();
        let dir = Path::new("/db");
        let mut created = fs.create(&dir.join("new")).unwrap();
        created.append(b"x").unwrap();
        created.sync().unwrap();
        fs.rename(&dir.join("log"), &dir.join("renamed")).unwrap();
        let mut seen = std::collections::BTreeSet::new();
        for seed in 1..100 {
            let image = fs.crash_image(seed);
            let mut names = image.list(dir).unwrap();
            names.sort();
            // A rename is atomic: one of the two names, never both or none.
            assert_eq!(
                names.contains(&"log".to_owned()),
                !names.contains(&"renamed".to_owned()),
                "{names:?}"
            );
            seen.insert(names);
        }
        assert_eq!(seen.len(), 4, "{seen:?}");
        fs.sync_dir(dir).unwrap();
        for seed in 1..20 {
            let mut names = fs.crash_image(seed).list(dir).unwrap();
            names.sort();
            assert_eq!(names, ["new", "renamed"]);
        }
    }
}
