#![no_main]
//! The value filter directory of a table (`value/table_filters.rs`), format 2
//! or 3 as the first byte is even or odd: decoding never panics, and a format-3
//! directory re-encodes to its input up to overlong varints.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| siftdb::fuzzing::value_filter_directory(data));
