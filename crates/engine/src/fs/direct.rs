//! Reads that bypass the operating system's page cache (`O_DIRECT`), for
//! `DbBuilder::direct_reads`: a store larger than memory, or a benchmark,
//! then pays for every read the database's own caches miss, as RocksDB's
//! `use_direct_reads` does.
//!
//! `O_DIRECT` reads must start and end on the device's block boundaries
//! and land in a buffer aligned to them. A read is widened to [`ALIGN`]
//! bytes on both sides into an aligned scratch buffer, and the asked part
//! copied out.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use super::ReadableFile;

/// Alignment of offsets, lengths and buffers: the largest logical block
/// size in common use (512 bytes suffices on most devices).
const ALIGN: usize = 4096;

/// A file opened for direct reads.
#[derive(Debug)]
pub(super) struct DirectReadable(File);

impl DirectReadable {
    /// Opens `path` for direct reads. A file system that cannot (tmpfs,
    /// some network file systems) is an error that says so.
    pub(super) fn open(path: &Path) -> io::Result<Self> {
        OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .map(Self)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::EINVAL) => io::Error::new(
                    io::ErrorKind::Unsupported,
                    "direct reads (O_DIRECT) are not supported by this file system",
                ),
                _ => e,
            })
    }
}

impl ReadableFile for DirectReadable {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let start = offset - offset % ALIGN as u64;
        let skip = (offset - start) as usize;
        let len = (skip + buf.len()).next_multiple_of(ALIGN);
        let mut scratch = vec![0u8; len + ALIGN];
        let at = scratch.as_ptr().align_offset(ALIGN);
        let aligned = scratch
            .get_mut(at..at + len)
            .ok_or_else(|| io::Error::other("aligned read buffer"))?;
        let mut filled = 0;
        while filled < skip + buf.len() {
            // Whole blocks at aligned offsets; the file's end may cut the
            // last one short.
            let read = match self
                .0
                .read_at(&mut aligned[filled..], start + filled as u64)
            {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "file ends before the read",
                    ));
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            filled += read;
            if filled % ALIGN != 0 && filled < skip + buf.len() {
                // A short read off a block boundary is the end of the file.
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "file ends before the read",
                ));
            }
        }
        buf.copy_from_slice(&aligned[skip..skip + buf.len()]);
        Ok(())
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_at_any_offset_and_length_match_the_file() {
        let dir = std::env::temp_dir().join(format!("sift-direct-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t");
        let bytes: Vec<u8> = (0..3 * ALIGN as u32 + 123)
            .map(|i| (i * 7 + i / 251) as u8)
            .collect();
        std::fs::write(&path, &bytes).unwrap();
        let file = match DirectReadable::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                // Not on this file system: the error said so.
                std::fs::remove_dir_all(&dir).unwrap();
                return;
            }
            Err(e) => panic!("{e}"),
        };
        assert_eq!(file.size().unwrap(), bytes.len() as u64);
        for (offset, len) in [
            (0, 1),
            (1, 4095),
            (4095, 2),
            (4096, 4096),
            (100, 9000),
            (0, bytes.len()),
            (bytes.len() - 5, 5),
        ] {
            let mut buf = vec![0; len];
            file.read_exact_at(&mut buf, offset as u64).unwrap();
            assert_eq!(
                buf,
                bytes[offset..offset + len],
                "offset {offset} len {len}"
            );
        }
        let mut past = vec![0; 10];
        let err = file
            .read_exact_at(&mut past, bytes.len() as u64 - 5)
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
