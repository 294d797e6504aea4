#![no_main]
//! A manifest version edit (`manifest/edit.rs`): decoding never panics, and
//! what decodes re-encodes to its input up to overlong varints and the order of
//! fields (see `siftdb::fuzzing`).
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| siftdb::fuzzing::version_edit(data));
