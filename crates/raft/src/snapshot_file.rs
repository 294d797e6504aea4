//! [`SnapshotFile`]: the snapshot data openraft streams, a file of the
//! node's [`FileSystem`](siftdb::fs::FileSystem) behind tokio's async I/O
//! traits. Every read and write runs on tokio's blocking pool, as
//! `tokio::fs` does, so a node's async threads never wait on the disk.
//!
//! A snapshot being received is written from start to end. openraft seeks
//! to each chunk's offset; a chunk sent again after a lost answer starts
//! before the end and repeats bytes already written (the same snapshot, so
//! the same bytes), which are skipped. A chunk past the end is an error.

use std::future::Future;
use std::io::{self, SeekFrom};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use siftdb::fs::{ReadableFile, WritableFile};
use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};
use tokio::task::JoinHandle;

/// One snapshot's file, being read (to send it) or received.
#[derive(Debug)]
pub struct SnapshotFile {
    /// The snapshot's number among the node's snapshots.
    number: u64,
    side: Side,
    /// Bytes in the file (a received file: bytes written so far).
    len: u64,
    /// Where the next read or write starts.
    pos: u64,
    /// The read or write under way on the blocking pool.
    pending: Option<JoinHandle<io::Result<Done>>>,
}

#[derive(Debug)]
enum Side {
    Reading(Arc<dyn ReadableFile>),
    /// `None` while a write has it.
    Receiving(Option<Box<dyn WritableFile>>),
}

/// What a blocking read or write gives back.
#[derive(Debug)]
enum Done {
    Read(Vec<u8>),
    Wrote(Box<dyn WritableFile>),
}

impl SnapshotFile {
    /// Snapshot `number`'s file, to read.
    pub(crate) fn reading(number: u64, file: Arc<dyn ReadableFile>) -> io::Result<Self> {
        let len = file.size()?;
        Ok(Self::new(number, Side::Reading(file), len))
    }

    /// A new file receiving snapshot `number`.
    pub(crate) fn receiving(number: u64, file: Box<dyn WritableFile>) -> Self {
        Self::new(number, Side::Receiving(Some(file)), 0)
    }

    fn new(number: u64, side: Side, len: u64) -> Self {
        Self {
            number,
            side,
            len,
            pos: 0,
            pending: None,
        }
    }

    /// The snapshot's number among the node's snapshots.
    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// Whether this file is one the node received (not one it reads).
    pub(crate) fn is_received(&self) -> bool {
        matches!(self.side, Side::Receiving(_))
    }

    /// Makes a received file durable, and returns its snapshot's number.
    ///
    /// # Errors
    /// What a write or the sync returned; an error for a file that was
    /// not received.
    pub(crate) async fn finish(mut self) -> io::Result<u64> {
        std::future::poll_fn(|cx| self.poll_pending(cx)).await?;
        let Side::Receiving(file) = &mut self.side else {
            return Err(io::Error::other(format!(
                "snapshot {} was not received: it cannot be installed",
                self.number
            )));
        };
        let mut file = file.take().ok_or_else(interrupted)?;
        tokio::task::spawn_blocking(move || file.sync())
            .await
            .map_err(io::Error::other)??;
        Ok(self.number)
    }

    /// Waits for the read or write under way; a read's bytes are returned.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Option<Vec<u8>>>> {
        let Some(pending) = &mut self.pending else {
            return Poll::Ready(Ok(None));
        };
        let done = ready!(Pin::new(pending).poll(cx));
        self.pending = None;
        Poll::Ready(match done.map_err(io::Error::other)? {
            Ok(Done::Read(bytes)) => Ok(Some(bytes)),
            Ok(Done::Wrote(file)) => {
                self.side = Side::Receiving(Some(file));
                Ok(None)
            }
            Err(e) => Err(e),
        })
    }
}

/// A file whose last write failed has no handle left.
fn interrupted() -> io::Error {
    io::Error::other("an earlier write of the snapshot failed")
}

impl AsyncRead for SnapshotFile {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if let Some(bytes) = ready!(this.poll_pending(cx))? {
                // The caller may ask for less than it did when the read
                // began: what does not fit is read again.
                let n = bytes.len().min(buf.remaining());
                buf.put_slice(&bytes[..n]);
                this.pos += n as u64;
                return Poll::Ready(Ok(()));
            }
            let Side::Reading(file) = &this.side else {
                return Poll::Ready(Err(io::Error::other("a received snapshot is not read")));
            };
            let left = this.len.saturating_sub(this.pos);
            let want =
                usize::try_from(left).map_or(buf.remaining(), |left| left.min(buf.remaining()));
            if want == 0 {
                return Poll::Ready(Ok(()));
            }
            let (file, pos) = (Arc::clone(file), this.pos);
            this.pending = Some(tokio::task::spawn_blocking(move || {
                let mut bytes = vec![0; want];
                file.read_exact_at(&mut bytes, pos)?;
                Ok(Done::Read(bytes))
            }));
        }
    }
}

impl AsyncWrite for SnapshotFile {
    /// Starts the write and returns: its error, if any, comes with the
    /// next call.
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        ready!(this.poll_pending(cx))?;
        let Side::Receiving(file) = &mut this.side else {
            return Poll::Ready(Err(io::Error::other(
                "a snapshot being sent is not written",
            )));
        };
        if this.pos > this.len {
            return Poll::Ready(Err(io::Error::other(format!(
                "a chunk at offset {} of a snapshot received up to {}",
                this.pos, this.len
            ))));
        }
        // Bytes already written: a chunk sent again.
        let repeated = usize::try_from(this.len - this.pos).map_or(buf.len(), |n| n.min(buf.len()));
        let fresh = buf[repeated..].to_vec();
        this.pos += buf.len() as u64;
        if !fresh.is_empty() {
            let mut file = file.take().ok_or_else(interrupted)?;
            this.len += fresh.len() as u64;
            this.pending = Some(tokio::task::spawn_blocking(move || {
                file.append(&fresh)?;
                Ok(Done::Wrote(file))
            }));
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_pending(cx).map_ok(drop)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_pending(cx).map_ok(drop)
    }
}

impl AsyncSeek for SnapshotFile {
    fn start_seek(mut self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        let (base, delta) = match position {
            SeekFrom::Start(offset) => (0, i128::from(offset)),
            SeekFrom::End(delta) => (self.len, i128::from(delta)),
            SeekFrom::Current(delta) => (self.pos, i128::from(delta)),
        };
        self.pos = u64::try_from(i128::from(base) + delta)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a seek outside the file"))?;
        Ok(())
    }

    fn poll_complete(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        ready!(self.poll_pending(cx))?;
        Poll::Ready(Ok(self.pos))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use siftdb::fs::{FaultInjectionFs, FileSystem};
    use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn chunks_sent_again_are_skipped_and_gaps_refused() {
        let fs = FaultInjectionFs::new();
        fs.create_dir_all(Path::new("/s")).unwrap();
        let path = Path::new("/s/snapshot-3.tar");
        runtime().block_on(async {
            let mut file = SnapshotFile::receiving(3, fs.create(path).unwrap());
            file.write_all(b"0123").await.unwrap();
            file.seek(SeekFrom::Start(2)).await.unwrap();
            file.write_all(b"2345").await.unwrap();
            file.seek(SeekFrom::Start(6)).await.unwrap();
            file.write_all(b"67").await.unwrap();
            file.seek(SeekFrom::Start(10)).await.unwrap();
            assert!(file.write_all(b"x").await.is_err());
            file.seek(SeekFrom::Start(8)).await.unwrap();
            assert_eq!(file.finish().await.unwrap(), 3);
        });
        // The data is durable; its name is, once the directory is synced.
        fs.sync_dir(Path::new("/s")).unwrap();
        assert_eq!(fs.crash().contents(path).unwrap(), b"01234567");
    }

    #[test]
    fn a_file_is_read_from_any_offset_to_its_end() {
        let fs = FaultInjectionFs::new();
        fs.create_dir_all(Path::new("/s")).unwrap();
        let path = Path::new("/s/snapshot-1.tar");
        crate::files::write_synced(&fs, path, b"abcdefgh").unwrap();
        runtime().block_on(async {
            let mut file = SnapshotFile::reading(1, fs.open(path).unwrap()).unwrap();
            assert_eq!(file.seek(SeekFrom::End(0)).await.unwrap(), 8);
            file.seek(SeekFrom::Start(3)).await.unwrap();
            let mut rest = Vec::new();
            file.read_to_end(&mut rest).await.unwrap();
            assert_eq!(rest, b"defgh");
            assert!(file.write_all(b"x").await.is_err());
            assert!(file.finish().await.is_err(), "a file read is not installed");
        });
    }

    #[test]
    fn a_failed_write_fails_the_file() {
        let fs = FaultInjectionFs::new();
        fs.create_dir_all(Path::new("/s")).unwrap();
        let path = Path::new("/s/snapshot-2.tar");
        runtime().block_on(async {
            let mut file = SnapshotFile::receiving(2, fs.create(path).unwrap());
            fs.inject(siftdb::fs::FaultOp::Append, "snapshot-2", 1);
            file.write_all(b"lost").await.unwrap();
            assert!(file.flush().await.is_err());
            assert!(file.write_all(b"more").await.is_err());
            assert!(file.finish().await.is_err());
        });
    }
}
