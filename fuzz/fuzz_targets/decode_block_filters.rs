#![no_main]
//! The block value filters of one table and index (`value/block_filters.rs`):
//! decoding never panics, the filters answer, and what decodes re-encodes to
//! its input up to overlong varints.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| siftdb::fuzzing::block_filters(data));
