#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sift_fuzz::check_range_decoder(data));
