#![no_main]
//! Recovery over a damaged file: the first byte picks which file of a small
//! valid database (WAL, manifest or CURRENT) is replaced by the rest of the
//! input. Opening returns an error or a database that can be read, never a
//! panic.
use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use siftdb::Db;
use siftdb::fs::{FaultInjectionFs, FileSystem};

fn open(fs: &FaultInjectionFs) -> siftdb::Result<Db> {
    Db::builder(Path::new("/db")).file_system(Arc::new(fs.clone())).background_threads(false).open()
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, contents)) = data.split_first() else { return };
    let fs = FaultInjectionFs::new();
    {
        let Ok(db) = open(&fs) else { return };
        for i in 0..20u32 {
            let _ = db.insert(i.to_be_bytes(), b"value");
        }
        if db.flush().is_err() {
            return;
        }
        let _ = db.insert(b"tail", b"in the wal");
    }
    let Ok(names) = fs.list(Path::new("/db")) else { return };
    let wanted = |name: &str| match which % 3 {
        0 => name.ends_with(".wal"),
        1 => name.starts_with("MANIFEST"),
        _ => name == "CURRENT",
    };
    let Some(name) = names.iter().find(|name| wanted(name)) else { return };
    if fs.set_contents(&Path::new("/db").join(name), contents.to_vec()).is_err() {
        return;
    }
    if let Ok(db) = open(&fs) {
        for item in db.range::<Vec<u8>, _>(..) {
            if item.is_err() {
                break;
            }
        }
        let _ = db.get(b"tail");
    }
});
