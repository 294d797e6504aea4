//! [`SnapshotFile`]: the snapshot data openraft streams, a snapshot's
//! directory as one tar stream ([`PackedDir`] to send it, [`Unpacker`] to
//! receive it), behind tokio's async I/O traits. Every read and write runs
//! on tokio's blocking pool, as `tokio::fs` does, so a node's async
//! threads never wait on the disk.
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

use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};
use tokio::task::JoinHandle;

use crate::snapshot_pack::PackedDir;
use crate::snapshot_unpack::Unpacker;

/// One snapshot's data, being read (to send it) or received.
#[derive(Debug)]
pub struct SnapshotFile {
    /// The snapshot's number among the node's snapshots.
    number: u64,
    side: Side,
    /// Bytes in the stream (a received one: bytes written so far).
    len: u64,
    /// Where the next read or write starts.
    pos: u64,
    /// The read or write under way on the blocking pool.
    pending: Option<JoinHandle<io::Result<Done>>>,
}

#[derive(Debug)]
enum Side {
    Reading(Arc<PackedDir>),
    /// `None` while a write has it.
    Receiving(Option<Box<Unpacker>>),
}

/// What a blocking read or write gives back.
#[derive(Debug)]
enum Done {
    Read(Vec<u8>),
    Wrote(Box<Unpacker>),
}

impl SnapshotFile {
    /// Snapshot `number`'s data, to read.
    pub(crate) fn reading(number: u64, packed: PackedDir) -> Self {
        let len = packed.len();
        Self::new(number, Side::Reading(Arc::new(packed)), len)
    }

    /// Snapshot `number`, to receive into `unpacker`.
    pub(crate) fn receiving(number: u64, unpacker: Unpacker) -> Self {
        Self::new(number, Side::Receiving(Some(Box::new(unpacker))), 0)
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

    /// Whether this is a snapshot the node receives (not one it reads).
    pub(crate) fn is_received(&self) -> bool {
        matches!(self.side, Side::Receiving(_))
    }

    /// Checks that a received stream is whole and makes it durable, and
    /// returns its snapshot's number.
    ///
    /// # Errors
    /// What a write or the sync returned, or a stream cut short; an error
    /// for a snapshot that was not received.
    pub(crate) async fn finish(mut self) -> io::Result<u64> {
        std::future::poll_fn(|cx| self.poll_pending(cx)).await?;
        let Side::Receiving(unpacker) = &mut self.side else {
            return Err(io::Error::other(format!(
                "snapshot {} was not received: it cannot be installed",
                self.number
            )));
        };
        let unpacker = unpacker.take().ok_or_else(interrupted)?;
        tokio::task::spawn_blocking(move || unpacker.finish())
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
            let Side::Reading(packed) = &this.side else {
                return Poll::Ready(Err(io::Error::other("a received snapshot is not read")));
            };
            let left = this.len.saturating_sub(this.pos);
            let want =
                usize::try_from(left).map_or(buf.remaining(), |left| left.min(buf.remaining()));
            if want == 0 {
                return Poll::Ready(Ok(()));
            }
            let (packed, pos) = (Arc::clone(packed), this.pos);
            this.pending = Some(tokio::task::spawn_blocking(move || {
                let mut bytes = vec![0; want];
                packed.read_exact_at(&mut bytes, pos)?;
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
        let Side::Receiving(unpacker) = &mut this.side else {
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
            let mut unpacker = unpacker.take().ok_or_else(interrupted)?;
            this.len += fresh.len() as u64;
            this.pending = Some(tokio::task::spawn_blocking(move || {
                unpacker.write(&fresh)?;
                Ok(Done::Wrote(unpacker))
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
    use std::path::{Path, PathBuf};

    use siftdb::fs::{FaultInjectionFs, FileSystem};
    use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// A snapshot directory `/from` with one table of 1,000 bytes, and its
    /// stream.
    fn source() -> (FaultInjectionFs, PackedDir, Vec<u8>) {
        let fs = FaultInjectionFs::new();
        fs.create_dir_all(Path::new("/from")).unwrap();
        let table: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
        crate::files::write_synced(&fs, Path::new("/from/000001.sst"), &table).unwrap();
        let packed = PackedDir::open(Arc::new(fs.clone()), PathBuf::from("/from")).unwrap();
        let mut stream = vec![0; packed.len() as usize];
        packed.read_exact_at(&mut stream, 0).unwrap();
        (fs, packed, stream)
    }

    fn receiving(fs: &FaultInjectionFs) -> SnapshotFile {
        let unpacker = Unpacker::create(Arc::new(fs.clone()), PathBuf::from("/to")).unwrap();
        SnapshotFile::receiving(3, unpacker)
    }

    #[test]
    fn chunks_sent_again_are_skipped_and_gaps_refused() {
        let (fs, _, stream) = source();
        runtime().block_on(async {
            let mut file = receiving(&fs);
            file.write_all(&stream[..600]).await.unwrap();
            file.seek(SeekFrom::Start(300)).await.unwrap();
            file.write_all(&stream[300..900]).await.unwrap();
            file.seek(SeekFrom::Start(1000)).await.unwrap();
            assert!(file.write_all(b"x").await.is_err());
            file.seek(SeekFrom::Start(900)).await.unwrap();
            file.write_all(&stream[900..]).await.unwrap();
            assert_eq!(file.finish().await.unwrap(), 3);
        });
        let table = Path::new("000001.sst");
        assert_eq!(
            fs.crash().contents(&Path::new("/to").join(table)),
            fs.contents(&Path::new("/from").join(table))
        );
    }

    #[test]
    fn a_stream_cut_short_is_not_installed() {
        let (fs, _, stream) = source();
        runtime().block_on(async {
            let mut file = receiving(&fs);
            file.write_all(&stream[..stream.len() - 512]).await.unwrap();
            assert!(file.finish().await.is_err());
        });
    }

    #[test]
    fn a_snapshot_is_read_from_any_offset_to_its_end() {
        let (_fs, packed, stream) = source();
        runtime().block_on(async {
            let mut file = SnapshotFile::reading(1, packed);
            let end = file.seek(SeekFrom::End(0)).await.unwrap();
            assert_eq!(end, stream.len() as u64);
            file.seek(SeekFrom::Start(700)).await.unwrap();
            let mut rest = Vec::new();
            file.read_to_end(&mut rest).await.unwrap();
            assert_eq!(rest, stream[700..]);
            assert!(file.write_all(b"x").await.is_err());
            assert!(
                file.finish().await.is_err(),
                "a snapshot read is not installed"
            );
        });
    }

    #[test]
    fn a_failed_write_fails_the_snapshot() {
        let (fs, _, stream) = source();
        runtime().block_on(async {
            let mut file = receiving(&fs);
            fs.inject(siftdb::fs::FaultOp::Append, "000001", 1);
            file.write_all(&stream[..800]).await.unwrap();
            assert!(file.flush().await.is_err());
            assert!(file.write_all(&stream[800..]).await.is_err());
            assert!(file.finish().await.is_err());
        });
    }
}
