#![no_main]
use libfuzzer_sys::fuzz_target;

// Both widths: the body's first byte picks which of the two may succeed.
fuzz_target!(|data: &[u8]| {
    sift_fuzz::check_decoder(data, sift_filter::Xor8::decode);
    sift_fuzz::check_decoder(data, sift_filter::Xor16::decode);
});
