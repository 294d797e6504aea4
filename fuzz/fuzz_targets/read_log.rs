#![no_main]
//! A whole log file, read as a WAL and as a manifest (`log/stream.rs`,
//! `log/reader.rs`): reading never panics, streaming it in small chunks reads
//! the same as in one, what it keeps rewrites to the same bytes, and each record
//! goes on to the batch or edit decoder. Checksums are not checked under
//! `cfg(fuzzing)`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| siftdb::fuzzing::log_file(data));
