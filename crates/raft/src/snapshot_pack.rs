//! [`PackedDir`]: a snapshot's directory read as one tar stream, packed on
//! the fly at any offset, so a snapshot is stored once, as the files a
//! follower opens, and never written a second time to be sent.
//!
//! The stream is what `tar` writes for plain files: per file a 512-byte
//! header, its bytes, zeros up to the next 512-byte boundary; then two
//! zero blocks. [`crate::snapshot_unpack`] reads it back.
//!
//! A file is opened only while its bytes are read, one at a time: a
//! snapshot of 600 tables once held 600 descriptors for as long as it was
//! sent, and past about 500 a node ran out of its 1,024. The directory
//! must stay while the stream is read: [`crate::snapshot`] keeps a
//! snapshot that is being read until its readers are done.

use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use siftdb::fs::ReadableFile;

use crate::files::{self, Fs};
use crate::snapshot::Lease;

/// A tar stream's block size.
pub(crate) const BLOCK: u64 = 512;

/// The files of a directory as a tar stream.
#[derive(Debug)]
pub(crate) struct PackedDir {
    fs: Fs,
    dir: PathBuf,
    entries: Vec<Entry>,
    len: u64,
    /// The one file open: its entry's index, and the file.
    open: Mutex<Option<(usize, Arc<dyn ReadableFile>)>>,
    /// Keeps the directory while the stream is read.
    _lease: Option<Lease>,
}

/// One file in the stream.
#[derive(Debug)]
struct Entry {
    /// Where its header starts.
    start: u64,
    header: [u8; BLOCK as usize],
    name: String,
    size: u64,
}

impl Entry {
    /// Where its bytes start.
    fn data(&self) -> u64 {
        self.start + BLOCK
    }

    /// Where the next header starts.
    fn end(&self) -> u64 {
        self.data() + self.size.next_multiple_of(BLOCK)
    }
}

impl PackedDir {
    /// The plain files of `dir` (subdirectories are left out), in name
    /// order, with their sizes as they are now (a snapshot's files do not
    /// change). Each is opened for its size and closed again: none is left
    /// open.
    pub(crate) fn open(fs: Fs, dir: PathBuf) -> io::Result<Self> {
        let mut names = fs.list(&dir)?;
        names.sort();
        let mut entries = Vec::with_capacity(names.len());
        let mut start = 0;
        for name in names {
            let path = dir.join(&name);
            if files::is_dir(fs.as_ref(), &path) {
                continue;
            }
            let size = fs.open(&path)?.size()?;
            let entry = Entry {
                start,
                header: header(&name, size)?,
                name,
                size,
            };
            start = entry.end();
            entries.push(entry);
        }
        Ok(Self {
            fs,
            dir,
            entries,
            len: start + 2 * BLOCK,
            open: Mutex::new(None),
            _lease: None,
        })
    }

    /// The same stream, keeping the directory with `lease` while it is
    /// read.
    pub(crate) fn leased(mut self, lease: Lease) -> Self {
        self._lease = Some(lease);
        self
    }

    /// The stream's length in bytes.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Fills `buf` with the stream's bytes from `offset`; an error if the
    /// stream ends first.
    pub(crate) fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let past_end = offset
            .checked_add(buf.len() as u64)
            .is_none_or(|end| end > self.len);
        if past_end {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("a read past the end of a {}-byte snapshot", self.len),
            ));
        }
        // The entry holding `offset`: the last one starting at or before it.
        let first = self.entries.partition_point(|e| e.start <= offset);
        let (mut filled, mut pos) = (0, offset);
        for index in first.saturating_sub(1)..self.entries.len() {
            if filled == buf.len() {
                return Ok(());
            }
            filled += self.read_entry(index, &mut buf[filled..], pos)?;
            pos = offset + filled as u64;
        }
        // The closing zero blocks.
        buf[filled..].fill(0);
        Ok(())
    }

    /// Entry `index`'s file, opened if it is not the one open (which is
    /// closed first).
    fn file(&self, index: usize) -> io::Result<Arc<dyn ReadableFile>> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((at, file)) = open.as_ref()
            && *at == index
        {
            return Ok(Arc::clone(file));
        }
        *open = None;
        let file = self.fs.open(&self.dir.join(&self.entries[index].name))?;
        *open = Some((index, Arc::clone(&file)));
        Ok(file)
    }

    /// Copies into `buf` entry `index`'s bytes from stream offset `pos` on
    /// (header, data, padding), as many as fit; returns how many.
    fn read_entry(&self, index: usize, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        let entry = &self.entries[index];
        let room = buf.len() as u64;
        let (mut filled, mut pos) = (0, pos.max(entry.start));
        // How many bytes of the part ending at `end` go in now.
        let take = |filled: usize, pos: u64, end: u64| {
            end.saturating_sub(pos).min(room - filled as u64) as usize
        };
        let n = take(filled, pos, entry.data());
        if n > 0 {
            let from = (pos - entry.start) as usize;
            buf[..n].copy_from_slice(&entry.header[from..from + n]);
            (filled, pos) = (n, pos + n as u64);
        }
        let n = take(filled, pos, entry.data() + entry.size);
        if n > 0 {
            self.file(index)?
                .read_exact_at(&mut buf[filled..filled + n], pos - entry.data())?;
            (filled, pos) = (filled + n, pos + n as u64);
        }
        let n = take(filled, pos, entry.end());
        buf[filled..filled + n].fill(0);
        Ok(filled + n)
    }
}

/// The header of a plain file `name` of `size` bytes.
fn header(name: &str, size: u64) -> io::Result<[u8; BLOCK as usize]> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_path(name)?;
    header.set_size(size);
    header.set_mode(0o644);
    header.set_mtime(0);
    header.set_cksum();
    let mut bytes = [0; BLOCK as usize];
    bytes.copy_from_slice(header.as_bytes());
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::path::Path;

    use siftdb::fs::{FaultInjectionFs, FileSystem};

    use super::*;

    fn packed(files: &[(&str, usize)]) -> (FaultInjectionFs, PackedDir) {
        let fs = FaultInjectionFs::new();
        let dir = Path::new("/snap");
        fs.create_dir_all(&dir.join("sub")).unwrap();
        for &(name, len) in files {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + name.len()) as u8).collect();
            files::write_synced(&fs, &dir.join(name), &bytes).unwrap();
        }
        let packed = PackedDir::open(Arc::new(fs.clone()), dir.to_path_buf()).unwrap();
        (fs, packed)
    }

    fn whole(packed: &PackedDir) -> Vec<u8> {
        let mut bytes = vec![0; packed.len() as usize];
        packed.read_exact_at(&mut bytes, 0).unwrap();
        bytes
    }

    #[test]
    fn the_stream_is_a_tar_of_the_files_that_tar_reads_back() {
        let files = [
            ("000007.sst", 1500),
            ("CURRENT", 16),
            ("LOCK", 0),
            ("MANIFEST-000009", 512),
        ];
        let (fs, packed) = packed(&files);
        let bytes = whole(&packed);
        assert_eq!(bytes.len() % BLOCK as usize, 0);
        let mut archive = tar::Archive::new(&bytes[..]);
        let mut seen = Vec::new();
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let name = entry.path().unwrap().to_string_lossy().into_owned();
            let mut data = Vec::new();
            entry.read_to_end(&mut data).unwrap();
            assert_eq!(Some(data), fs.contents(&Path::new("/snap").join(&name)));
            seen.push(name);
        }
        // In name order, and without the subdirectory.
        assert_eq!(seen, files.map(|(name, _)| name));
    }

    #[test]
    fn any_range_reads_as_the_same_bytes_of_the_whole() {
        let (_fs, packed) = packed(&[("a", 700), ("b", 1), ("c", 1024)]);
        let bytes = whole(&packed);
        for offset in (0..bytes.len()).step_by(97) {
            for len in [0, 1, 511, 512, 1000, 4096] {
                let end = (offset + len).min(bytes.len());
                let mut part = vec![0xaa; end - offset];
                packed.read_exact_at(&mut part, offset as u64).unwrap();
                assert_eq!(part, bytes[offset..end], "at {offset}, {len} bytes");
            }
        }
        let mut past = [0; 2];
        let err = packed
            .read_exact_at(&mut past, packed.len() - 1)
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn files_are_opened_one_at_a_time_as_they_are_read() {
        let sizes: Vec<(String, usize)> = (0..50).map(|i| (format!("{i:06}.sst"), 700)).collect();
        let names: Vec<(&str, usize)> = sizes.iter().map(|(n, l)| (n.as_str(), *l)).collect();
        let (fs, packed) = packed(&names);
        assert_eq!(fs.open_files(), 0, "open holds no file");
        let mut bytes = vec![0; packed.len() as usize];
        for (i, chunk) in bytes.chunks_mut(1000).enumerate() {
            packed.read_exact_at(chunk, i as u64 * 1000).unwrap();
            assert!(fs.open_files() <= 1, "{} files open", fs.open_files());
        }
        assert_eq!(bytes, whole(&packed));
        drop(packed);
        assert_eq!(fs.open_files(), 0);
    }

    #[test]
    fn an_empty_directory_is_the_two_closing_blocks() {
        let (_fs, packed) = packed(&[]);
        assert_eq!(whole(&packed), vec![0; 1024]);
    }
}
