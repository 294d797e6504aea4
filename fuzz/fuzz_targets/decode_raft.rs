#![no_main]
use libfuzzer_sys::fuzz_target;

// Every decoder of what a replicated node stores or receives (sift-raft).
fuzz_target!(|data: &[u8]| {
    sift_raft::fuzzing::decode_everything(data);
});
