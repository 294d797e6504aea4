#![no_main]
//! An SSTable of arbitrary bytes: opening, iterating and verifying it
//! returns errors, never panics. Under `cfg(fuzzing)` block checksums are
//! not enforced, so the fuzzer reaches the block, index, properties and
//! filter decoders behind them.
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use siftdb::TableFile;
use siftdb::fs::{FaultInjectionFs, FileSystem};

fuzz_target!(|data: &[u8]| {
    let fs = FaultInjectionFs::new();
    let dir = Path::new("/t");
    let path = dir.join("000001.sst");
    if fs.create_dir_all(dir).is_err() {
        return;
    }
    let Ok(mut file) = fs.create(&path) else { return };
    if file.append(data).is_err() {
        return;
    }
    drop(file);
    let Ok(table) = TableFile::open_in(&fs, &path) else { return };
    let _ = table.properties();
    for entry in table.entries() {
        if entry.is_err() {
            break;
        }
    }
    let _ = table.verify();
});
