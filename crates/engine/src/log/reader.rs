//! [`read_log`]: every complete record of a log, and how it ends,
//! collected from a [`LogStream`] (where the rule for tails and damage
//! lives). For logs read whole by design: the manifest, `verify`.

use std::path::Path;

use super::stream::{LogStream, Step, Tail};
use super::{HEADER_LEN, LogKind, RECORD_HEADER_LEN};
use crate::error::{Error, Result};
use crate::fs::FileSystem;

/// Every complete record of a log.
#[derive(Debug)]
pub(crate) struct LogContents {
    /// Payloads in order.
    pub records: Vec<Vec<u8>>,
    /// Bytes up to the end of the last good record (the header's end if
    /// there is none, 0 if the header itself is incomplete).
    pub valid_len: u64,
    /// Whether anything follows it.
    pub tail: Tail,
}

impl LogContents {
    /// Offset in the file of each record (of its 8-byte record header), in
    /// the order of [`records`](Self::records): for error messages that
    /// name where a record's payload failed to decode.
    pub(crate) fn record_offsets(&self) -> impl Iterator<Item = u64> + '_ {
        self.records.iter().scan(HEADER_LEN as u64, |next, record| {
            let at = *next;
            *next += (RECORD_HEADER_LEN + record.len()) as u64;
            Some(at)
        })
    }
}

/// Reads every record of `path`, a log of `kind`. A missing file or a
/// failed read is [`Error::Io`]; damage before the tail is
/// [`Error::Corruption`] naming `path` and the offset.
pub(crate) fn read_log(fs: &dyn FileSystem, path: &Path, kind: LogKind) -> Result<LogContents> {
    let contents = collect(LogStream::open(fs, path, kind)?)?;
    if let Tail::Damaged { detail } = contents.tail {
        return Err(Error::corruption(path, contents.valid_len, detail));
    }
    Ok(contents)
}

/// Every record `stream` yields from here on, and how the log ends.
pub(crate) fn collect(mut stream: LogStream) -> Result<LogContents> {
    let mut records = Vec::new();
    loop {
        match stream.next()? {
            Step::Record { payload, .. } => records.push(payload.to_vec()),
            Step::End { valid_len, tail } => {
                return Ok(LogContents {
                    records,
                    valid_len,
                    tail,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use proptest::prelude::*;

    use super::super::{LogWriter, encode_header, encode_record};
    use super::*;
    use crate::encoding::checksum;
    use crate::fs::FaultInjectionFs;

    fn records() -> Vec<Vec<u8>> {
        vec![
            b"first".to_vec(),
            Vec::new(),
            vec![7; 300],
            b"last record".to_vec(),
        ]
    }

    /// A file system holding `/db/log` with `records`; returns it, the
    /// path and the offset where each record starts (plus the end).
    fn written(records: &[Vec<u8>]) -> (FaultInjectionFs, PathBuf, Vec<u64>) {
        let fs = FaultInjectionFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        let path = PathBuf::from("/db/log");
        let mut writer = LogWriter::create(&fs, &path, LogKind::Wal).unwrap();
        assert_eq!(writer.path(), path);
        let mut offsets = vec![writer.size()];
        for record in records {
            writer.add_record(record).unwrap();
            offsets.push(writer.size());
        }
        writer.sync().unwrap();
        (fs, path, offsets)
    }

    #[test]
    fn round_trip_and_sizes() {
        let (fs, path, offsets) = written(&records());
        let contents = read_log(&fs, &path, LogKind::Wal).unwrap();
        assert_eq!(contents.records, records());
        assert_eq!(contents.tail, Tail::Clean);
        assert_eq!(contents.valid_len, *offsets.last().unwrap());
        assert_eq!(fs.contents(&path).unwrap().len() as u64, contents.valid_len);
        let starts: Vec<u64> = contents.record_offsets().collect();
        assert_eq!(starts, offsets[..offsets.len() - 1]);
        let err = read_log(&fs, &path, LogKind::Manifest).unwrap_err();
        assert!(matches!(err, Error::Corruption { offset: 5, .. }), "{err}");
    }

    #[test]
    fn golden_file() {
        let (fs, path, _) = written(&[b"hi".to_vec()]);
        let mut expected = encode_header(LogKind::Wal).to_vec();
        expected.extend_from_slice(&checksum(b"\x02\x00\x00\x00hi").to_le_bytes());
        expected.extend_from_slice(b"\x02\x00\x00\x00hi");
        assert_eq!(fs.contents(&path).unwrap(), expected);
    }

    #[test]
    fn a_cut_anywhere_in_the_last_record_is_a_torn_tail() {
        let (fs, path, offsets) = written(&records());
        let full = fs.contents(&path).unwrap();
        let last_start = offsets[offsets.len() - 2] as usize;
        for cut in last_start..full.len() {
            fs.set_contents(&path, full[..cut].to_vec()).unwrap();
            let contents = read_log(&fs, &path, LogKind::Wal).unwrap();
            assert_eq!(contents.records, records()[..3], "cut at {cut}");
            assert_eq!(contents.valid_len, last_start as u64, "cut at {cut}");
            assert_eq!(
                contents.tail == Tail::Clean,
                cut == last_start,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_cut_at_every_offset_keeps_the_whole_records_before_it() {
        let (fs, path, offsets) = written(&records());
        let full = fs.contents(&path).unwrap();
        for cut in 0..=full.len() {
            fs.set_contents(&path, full[..cut].to_vec()).unwrap();
            let contents = read_log(&fs, &path, LogKind::Wal).unwrap();
            let whole = offsets
                .iter()
                .filter(|&&end| end <= cut as u64)
                .count()
                .saturating_sub(1);
            assert_eq!(contents.records, records()[..whole], "cut at {cut}");
            let expected_len = if cut < HEADER_LEN { 0 } else { offsets[whole] };
            assert_eq!(contents.valid_len, expected_len, "cut at {cut}");
            let clean = cut == 0 || offsets.contains(&(cut as u64));
            assert_eq!(contents.tail == Tail::Clean, clean, "cut at {cut}");
        }
    }

    #[test]
    fn damage_in_the_last_record_is_a_torn_tail() {
        let (fs, path, offsets) = written(&records());
        let full = fs.contents(&path).unwrap();
        let last_start = offsets[offsets.len() - 2] as usize;
        // Payload and checksum bytes; a damaged length reads as torn too
        // unless it shrinks the record (then bytes follow: corruption).
        for at in (last_start..last_start + 4).chain(last_start + 8..full.len()) {
            let mut bytes = full.clone();
            bytes[at] ^= 0x5a;
            fs.set_contents(&path, bytes).unwrap();
            let contents = read_log(&fs, &path, LogKind::Wal).unwrap();
            assert_eq!(contents.records, records()[..3], "flip at {at}");
            assert_eq!(contents.valid_len, last_start as u64);
            assert!(matches!(contents.tail, Tail::Torn { .. }));
        }
    }

    #[test]
    fn a_flipped_byte_in_a_middle_record_is_corruption_at_its_offset() {
        let (fs, path, offsets) = written(&records());
        let full = fs.contents(&path).unwrap();
        for record in 0..records().len() - 1 {
            let (start, end) = (offsets[record] as usize, offsets[record + 1] as usize);
            // Checksum and payload bytes (length bytes may point past the end).
            for at in (start..start + 4).chain(start + 8..end) {
                let mut bytes = full.clone();
                bytes[at] ^= 0x5a;
                fs.set_contents(&path, bytes).unwrap();
                match read_log(&fs, &path, LogKind::Wal) {
                    Err(Error::Corruption {
                        path: p,
                        offset,
                        detail,
                    }) => {
                        assert_eq!(p, path);
                        assert_eq!(offset, start as u64, "flip at {at}: {detail}");
                    }
                    other => panic!("flip at {at}: {other:?}"),
                }
            }
        }
    }

    /// A damaged length field is corruption wherever it points: past the
    /// end of the file (once read as a cut final record, silently dropping
    /// every later one) or inside it.
    #[test]
    fn a_flipped_length_byte_in_a_middle_record_is_corruption() {
        let (fs, path, offsets) = written(&records());
        let full = fs.contents(&path).unwrap();
        for record in 0..records().len() - 1 {
            let start = offsets[record] as usize;
            for at in start + 4..start + 8 {
                for flip in [0x01, 0x5a, 0xff] {
                    let mut bytes = full.clone();
                    bytes[at] ^= flip;
                    fs.set_contents(&path, bytes).unwrap();
                    match read_log(&fs, &path, LogKind::Wal) {
                        Err(Error::Corruption { offset, .. }) => {
                            assert_eq!(offset, start as u64, "flip {flip:#x} at {at}");
                        }
                        other => panic!("flip {flip:#x} at {at}: {other:?}"),
                    }
                }
            }
        }
    }

    /// A power cut that kept some pages of the last, unsynced write and not
    /// others: zeros where pages are missing, then more of the record.
    #[test]
    fn a_last_record_with_zeroed_holes_is_a_torn_tail() {
        let mut all = records();
        all.push(vec![0x33; 2000]);
        let (fs, path, offsets) = written(&all);
        let full = fs.contents(&path).unwrap();
        let last_start = offsets[offsets.len() - 2] as usize;
        for (hole_start, hole_len) in [(0, 8), (0, 512), (4, 4), (100, 700), (1500, 400)] {
            let mut bytes = full.clone();
            let from = last_start + hole_start;
            bytes[from..from + hole_len].fill(0);
            fs.set_contents(&path, bytes).unwrap();
            let contents = read_log(&fs, &path, LogKind::Wal).unwrap();
            assert_eq!(
                contents.records,
                records(),
                "hole at {hole_start}+{hole_len}"
            );
            assert_eq!(contents.valid_len, last_start as u64);
            assert!(matches!(contents.tail, Tail::Torn { .. }));
        }
    }

    #[test]
    fn a_shrunk_length_in_a_middle_record_is_corruption() {
        let (fs, path, offsets) = written(&records());
        let mut bytes = fs.contents(&path).unwrap();
        let third = offsets[2] as usize;
        bytes[third + 4] = 10; // 300 bytes claimed as 10
        fs.set_contents(&path, bytes).unwrap();
        let err = read_log(&fs, &path, LogKind::Wal).unwrap_err();
        assert!(
            matches!(err, Error::Corruption { offset, .. } if offset == third as u64),
            "{err}"
        );
    }

    #[test]
    fn zeros_or_garbage_after_the_last_record() {
        let (fs, path, offsets) = written(&records());
        let full = fs.contents(&path).unwrap();
        let end = *offsets.last().unwrap();
        // An all-zero record must not pass its own checksum.
        assert_ne!(checksum(&[0; 4]), 0);
        for zeros in [1, 7, 8, 9, 100, 5000] {
            let mut bytes = full.clone();
            bytes.extend(std::iter::repeat_n(0, zeros));
            fs.set_contents(&path, bytes).unwrap();
            let contents = read_log(&fs, &path, LogKind::Wal).unwrap();
            assert_eq!(contents.records, records(), "{zeros} zeros");
            assert_eq!(contents.valid_len, end);
            assert!(matches!(contents.tail, Tail::Torn { .. }));
        }
        // The prefix of a record, then zeros: the record's length reaches past the end.
        let mut bytes = full.clone();
        bytes.extend_from_slice(&encode_record(&[9; 100])[..20]);
        bytes.extend_from_slice(&[0; 30]);
        fs.set_contents(&path, bytes).unwrap();
        let contents = read_log(&fs, &path, LogKind::Wal).unwrap();
        assert_eq!((contents.records.len(), contents.valid_len), (4, end));
        // Garbage whose length field points past the end: torn.
        let mut bytes = full.clone();
        bytes.extend_from_slice(&[0xab; 40]);
        fs.set_contents(&path, bytes).unwrap();
        assert!(matches!(
            read_log(&fs, &path, LogKind::Wal).unwrap().tail,
            Tail::Torn { .. }
        ));
    }

    #[test]
    fn headers() {
        let fs = FaultInjectionFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        let path = PathBuf::from("/db/log");
        LogWriter::create(&fs, &path, LogKind::Manifest).unwrap();
        let header = fs.contents(&path).unwrap();
        let read = |bytes: Vec<u8>| {
            fs.set_contents(&path, bytes).unwrap();
            read_log(&fs, &path, LogKind::Manifest)
        };
        let contents = read(header.clone()).unwrap();
        assert_eq!(
            (contents.records.len(), contents.valid_len, contents.tail),
            (0, 12, Tail::Clean)
        );
        let contents = read(Vec::new()).unwrap();
        assert_eq!((contents.valid_len, contents.tail), (0, Tail::Clean));
        for len in 1..HEADER_LEN {
            let contents = read(header[..len].to_vec()).unwrap();
            assert_eq!(contents.valid_len, 0);
            assert!(matches!(contents.tail, Tail::Torn { .. }));
        }
        let contents = read(vec![0; 64]).unwrap();
        assert_eq!((contents.records.len(), contents.valid_len), (0, 0));
        assert!(matches!(contents.tail, Tail::Torn { .. }));
        for at in 0..HEADER_LEN {
            let mut bytes = header.clone();
            bytes[at] ^= 0x5a;
            match read(bytes) {
                Err(Error::Corruption {
                    path: p, offset, ..
                }) => {
                    assert_eq!(p, path);
                    assert!(offset < HEADER_LEN as u64);
                }
                other => panic!("flip at {at}: {other:?}"),
            }
        }
        assert!(matches!(
            read_log(&fs, Path::new("/db/missing"), LogKind::Wal),
            Err(Error::Io { .. })
        ));
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..200)) {
            let fs = FaultInjectionFs::new();
            fs.create_dir_all(Path::new("/db")).unwrap();
            let path = Path::new("/db/log");
            let mut bytes = encode_header(LogKind::Wal).to_vec();
            bytes.extend_from_slice(&tail);
            fs.create(path).unwrap();
            for bytes in [bytes, tail] {
                fs.set_contents(path, bytes.clone()).unwrap();
                let read = LogStream::open(&fs, path, LogKind::Wal).and_then(collect);
                if let Ok(contents) = read {
                    prop_assert!(contents.valid_len as usize <= bytes.len());
                }
            }
        }

        #[test]
        fn records_round_trip(records in proptest::collection::vec(
            proptest::collection::vec(any::<u8>(), 0..100), 0..10)
        ) {
            let (fs, path, _) = written(&records);
            let contents = read_log(&fs, &path, LogKind::Wal).unwrap();
            prop_assert_eq!(contents.records, records);
            prop_assert_eq!(contents.tail, Tail::Clean);
        }
    }
}
