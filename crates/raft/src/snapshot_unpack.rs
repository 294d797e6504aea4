//! [`Unpacker`]: a snapshot's tar stream written into a directory as its
//! bytes arrive, so a follower writes each byte it receives once. Each
//! file is synced as soon as it is complete, on a thread of its own, while
//! the next ones arrive and are written; at most [`MAX_UNSYNCED`] wait for
//! it, open (a snapshot of 600 tables once left 600 open on a slow disk).
//!
//! The bytes come from another node: a damaged or hostile stream is an
//! error, never a panic. Only plain files with plain names are unpacked,
//! each header's checksum is checked, and the stream must end with its two
//! zero blocks. What the files hold is checked again when the database
//! opens.

use std::io;
use std::path::{Component, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

use siftdb::fs::WritableFile;

use crate::files::Fs;
use crate::snapshot_pack::BLOCK;

/// The most complete files queued for their sync at once, each still open:
/// past it, the writer waits for the syncs.
const MAX_UNSYNCED: usize = 8;

/// Unpacks a tar stream into a new directory.
#[derive(Debug)]
pub(crate) struct Unpacker {
    fs: Fs,
    dir: PathBuf,
    state: State,
    syncer: Syncer,
}

/// A thread that syncs the files sent to it, in order, at most
/// [`MAX_UNSYNCED`] queued. Dropped, it still
/// waits for the thread: an unpacker refused mid-stream leaves no thread
/// syncing into a directory its caller is about to remove.
#[derive(Debug)]
struct Syncer {
    /// `None` once closed.
    files: Option<mpsc::SyncSender<Box<dyn WritableFile>>>,
    /// `None` once joined.
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl Syncer {
    fn start() -> io::Result<Self> {
        let (files, queue) = mpsc::sync_channel::<Box<dyn WritableFile>>(MAX_UNSYNCED);
        let thread = std::thread::Builder::new()
            .name("snapshot-sync".into())
            .spawn(move || queue.into_iter().try_for_each(|mut file| file.sync()))?;
        Ok(Self {
            files: Some(files),
            thread: Some(thread),
        })
    }

    /// Queues `file` to be synced.
    fn sync(&self, file: Box<dyn WritableFile>) -> io::Result<()> {
        // The thread only stops early on an error: `wait` returns it.
        self.files
            .as_ref()
            .and_then(|files| files.send(file).ok())
            .ok_or_else(|| io::Error::other("a snapshot file could not be synced"))
    }

    /// Waits until every file queued is synced.
    fn wait(mut self) -> io::Result<()> {
        self.join()
    }

    fn join(&mut self) -> io::Result<()> {
        drop(self.files.take());
        match self.thread.take() {
            Some(thread) => thread
                .join()
                .map_err(|_| io::Error::other("the snapshot's sync thread panicked"))?,
            None => Ok(()),
        }
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        // An error here belongs to a stream already refused.
        let _ = self.join();
    }
}

#[derive(Debug)]
enum State {
    /// Reading a header; `zero_blocks` counts the closing zero blocks seen.
    Header { bytes: Vec<u8>, zero_blocks: u8 },
    /// Writing a file's bytes, then skipping its padding.
    Data {
        file: Box<dyn WritableFile>,
        left: u64,
        padding: u64,
    },
    /// Past the closing blocks.
    Ended,
}

impl State {
    fn header(zero_blocks: u8) -> Self {
        Self::Header {
            bytes: Vec::with_capacity(BLOCK as usize),
            zero_blocks,
        }
    }
}

impl Unpacker {
    /// An unpacker into `dir`, created now (with its name synced: its
    /// files are synced as they complete).
    pub(crate) fn create(fs: Fs, dir: PathBuf) -> io::Result<Self> {
        fs.create_dir_all(&dir)?;
        if let Some(parent) = dir.parent() {
            fs.sync_dir(parent)?;
        }
        Ok(Self {
            fs,
            dir,
            state: State::header(0),
            syncer: Syncer::start()?,
        })
    }

    /// Takes the stream's next bytes.
    pub(crate) fn write(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            match &mut self.state {
                State::Header {
                    bytes: header,
                    zero_blocks,
                } => {
                    let n = bytes.len().min(BLOCK as usize - header.len());
                    header.extend_from_slice(&bytes[..n]);
                    bytes = &bytes[n..];
                    if header.len() == BLOCK as usize {
                        let (header, zero_blocks) = (std::mem::take(header), *zero_blocks);
                        self.state = self.after_header(&header, zero_blocks)?;
                    }
                }
                State::Data {
                    file,
                    left,
                    padding,
                } => {
                    let n = bytes
                        .len()
                        .min(usize::try_from(*left).unwrap_or(usize::MAX));
                    file.append(&bytes[..n])?;
                    *left -= n as u64;
                    bytes = &bytes[n..];
                    if *left > 0 {
                        continue;
                    }
                    let n = bytes.len().min(*padding as usize);
                    *padding -= n as u64;
                    bytes = &bytes[n..];
                    if *padding == 0
                        && let State::Data { file, .. } =
                            std::mem::replace(&mut self.state, State::header(0))
                    {
                        self.syncer.sync(file)?;
                    }
                }
                State::Ended => {
                    if bytes.iter().any(|&b| b != 0) {
                        return Err(damaged("bytes after the end"));
                    }
                    bytes = &[];
                }
            }
        }
        Ok(())
    }

    /// What follows the header block `header`.
    fn after_header(&self, header: &[u8], zero_blocks: u8) -> io::Result<State> {
        if header.iter().all(|&b| b == 0) {
            return Ok(match zero_blocks {
                0 => State::header(1),
                _ => State::Ended,
            });
        }
        if zero_blocks > 0 {
            return Err(damaged("a file after a closing block"));
        }
        let (name, size) = parse(header)?;
        let file = self.fs.create(&self.dir.join(name))?;
        Ok(State::Data {
            file,
            left: size,
            padding: size.next_multiple_of(BLOCK) - size,
        })
    }

    /// Checks that the stream ended, waits for its files to be synced, and
    /// makes the directory's names durable.
    pub(crate) fn finish(self) -> io::Result<()> {
        self.syncer.wait()?;
        if !matches!(self.state, State::Ended) {
            return Err(damaged("the stream ends early"));
        }
        self.fs.sync_dir(&self.dir)
    }
}

/// The name and size of the plain file a header describes.
fn parse(block: &[u8]) -> io::Result<(PathBuf, u64)> {
    let header = tar::Header::from_byte_slice(block);
    let stored = header
        .cksum()
        .map_err(|_| damaged("a header without a checksum"))?;
    // The sum of the header's bytes, its checksum field counted as spaces.
    let sum: u32 = block[..148]
        .iter()
        .chain(&block[156..])
        .map(|&b| u32::from(b))
        .sum::<u32>()
        + 8 * u32::from(b' ');
    if sum != stored {
        return Err(damaged("a header's checksum does not match"));
    }
    let path = header.path().map_err(|_| damaged("a header's name"))?;
    let mut components = path.components();
    let (Some(Component::Normal(name)), None) = (components.next(), components.next()) else {
        return Err(damaged(&format!("{} is not a plain name", path.display())));
    };
    if header.entry_type() != tar::EntryType::Regular {
        return Err(damaged(&format!("{} is not a plain file", path.display())));
    }
    let size = header.size().map_err(|_| damaged("a header's size"))?;
    Ok((PathBuf::from(name), size))
}

fn damaged(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("a damaged snapshot: {what}"),
    )
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use siftdb::fs::{FaultInjectionFs, FileSystem};

    use super::*;
    use crate::files;
    use crate::snapshot_pack::PackedDir;

    /// The stream of a directory holding files of these sizes.
    fn stream(sizes: &[usize]) -> (FaultInjectionFs, Vec<u8>) {
        let fs = FaultInjectionFs::new();
        let dir = Path::new("/from");
        fs.create_dir_all(dir).unwrap();
        for (i, &len) in sizes.iter().enumerate() {
            let bytes: Vec<u8> = (0..len).map(|b| (b * 31 + i) as u8).collect();
            files::write_synced(&fs, &dir.join(format!("{i:06}.sst")), &bytes).unwrap();
        }
        let packed = PackedDir::open(Arc::new(fs.clone()), dir.to_path_buf()).unwrap();
        let mut bytes = vec![0; packed.len() as usize];
        packed.read_exact_at(&mut bytes, 0).unwrap();
        (fs, bytes)
    }

    /// Unpacks `bytes` written in pieces of `piece` bytes into `/to`.
    fn unpack(fs: &FaultInjectionFs, bytes: &[u8], piece: usize) -> io::Result<()> {
        let mut unpacker = Unpacker::create(Arc::new(fs.clone()), PathBuf::from("/to"))?;
        for chunk in bytes.chunks(piece) {
            unpacker.write(chunk)?;
        }
        unpacker.finish()
    }

    fn hostile(path: &str, kind: tar::EntryType) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(kind);
        header.set_size(1);
        header.set_mode(0o644);
        // `append_data` refuses `..`: the name is written raw.
        header.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
        header.set_cksum();
        builder.append(&header, &b"x"[..]).unwrap();
        builder.into_inner().unwrap()
    }

    /// Files wait for their sync open: a slow disk must not leave every
    /// file of a snapshot of many tables open at once (a process has 1,024
    /// descriptors as a rule).
    #[test]
    fn files_waiting_for_their_sync_are_few_however_many_arrive() {
        let (fs, bytes) = stream(&[100; 600]);
        fs.on_sync(Arc::new(|_, _| {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }));
        let base = fs.open_files();
        fs.limit_open_files(Some(base + MAX_UNSYNCED + 2));
        unpack(&fs, &bytes, 1 << 20).unwrap();
        fs.limit_open_files(None);
        assert_eq!(fs.open_files(), base);
    }

    #[test]
    fn a_packed_directory_unpacks_whole_in_pieces_of_any_size() {
        let sizes = [0, 1, 511, 512, 513, 5000];
        for piece in [1, 7, 512, 1000, 1 << 20] {
            let (fs, bytes) = stream(&sizes);
            unpack(&fs, &bytes, piece).unwrap();
            // Durable: files synced as they completed, names at the end.
            let after = fs.crash();
            for i in 0..sizes.len() {
                let name = format!("{i:06}.sst");
                assert_eq!(
                    after.contents(&Path::new("/to").join(&name)),
                    fs.contents(&Path::new("/from").join(&name)),
                    "{name} in pieces of {piece}"
                );
            }
        }
    }

    #[test]
    fn a_stream_cut_short_or_continued_is_refused() {
        let (fs, bytes) = stream(&[700, 3]);
        for cut in [0, 100, 512, 1300, bytes.len() - 512] {
            let err = unpack(&fs, &bytes[..cut], 64).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData, "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.extend_from_slice(&[0; 512]);
        unpack(&fs, &longer, 64).unwrap();
        longer.push(1);
        assert!(unpack(&fs, &longer, 64).is_err());
    }

    #[test]
    fn a_refused_stream_leaves_no_sync_thread_behind() {
        let (fs, mut bytes) = stream(&[700, 3]);
        // The second header is damaged: the first file is queued to sync
        // before the stream is refused.
        bytes[1536 + 10] ^= 1;
        let synced = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = Arc::clone(&synced);
        fs.on_sync(Arc::new(move |_, point| {
            if matches!(point, siftdb::fs::SyncPoint::File(_)) {
                std::thread::sleep(std::time::Duration::from_millis(200));
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }));
        assert!(unpack(&fs, &bytes, 512).is_err());
        assert_eq!(synced.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[test]
    fn a_damaged_header_or_a_hostile_entry_is_refused() {
        let (fs, bytes) = stream(&[700]);
        let mut damaged = bytes.clone();
        damaged[10] ^= 1;
        let err = unpack(&fs, &damaged, 512).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        for (path, kind) in [
            ("../escape", tar::EntryType::Regular),
            ("sub/file", tar::EntryType::Regular),
            ("/abs", tar::EntryType::Regular),
            ("link", tar::EntryType::Symlink),
        ] {
            let err = unpack(&fs, &hostile(path, kind), 512).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{path}");
        }
        unpack(&fs, &hostile("000001.sst", tar::EntryType::Regular), 512).unwrap();
        assert_eq!(fs.contents(Path::new("/to/000001.sst")).unwrap(), b"x");
    }
}
