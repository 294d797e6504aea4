#![no_main]
use libfuzzer_sys::fuzz_target;

// A received snapshot file unpacked (sift-raft): refused or unpacked, never a panic.
fuzz_target!(|data: &[u8]| {
    sift_raft::fuzzing::unpack_snapshot(data);
});
