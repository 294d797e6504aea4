#![no_main]
//! A table's index block, in the walked layout (formats 1 to 4) and the one
//! searched in place (format 5): decoding never panics, every entry reads,
//! and where the keys are in order each is found at its own block.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| siftdb::fuzzing::table_index(data));
