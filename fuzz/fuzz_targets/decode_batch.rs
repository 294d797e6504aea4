#![no_main]
//! A write-batch record, the payload of one WAL record (`batch.rs`): decoding
//! never panics, and what decodes re-encodes to its input up to overlong
//! varints.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| siftdb::fuzzing::write_batch(data));
