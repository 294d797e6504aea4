#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| sift_fuzz::check_decoder(data, sift_filter::SplitBlockBloom::decode));
