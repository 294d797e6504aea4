//! The operations of the scan workloads: bounded seeks, empty ranges and
//! prefix scans, each checking its answer (a wrong one fails the run).

use std::ops::Range;

use anyhow::{bail, ensure};
use sift_filter::mix64;

use super::engine::Engine;
use super::stores::{Gapped, Prefixed};
use super::workload::{Keys, VALUE_LEN, pick};
use crate::filters::keys::Key;

/// Entries `seekrandombounded` reads at most per seek (db_bench's
/// `--seek_nexts`), and the keys' worth of key space its upper bound lies
/// after the seek key.
pub const SEEK_NEXTS: usize = 10;

/// Ranges of each `seekempty*` run checked, untimed, against the store
/// itself before the timed run ([`check_empty`]).
const EMPTY_SAMPLE: u64 = 100;

/// An upper bound above every 16-byte key.
const ABOVE_ALL: [u8; 17] = [0xff; 17];

/// The exclusive upper bound of `seekrandombounded` for `key`, one of `n`
/// random keys: its first 8 bytes, read as a big-endian integer, plus
/// [`SEEK_NEXTS`] times the mean distance between neighbouring keys. The
/// range holds `key` and about [`SEEK_NEXTS`] more (Poisson), of which the
/// seek reads [`SEEK_NEXTS`] at most.
pub fn bound_after(key: &Key, n: u64) -> Vec<u8> {
    let mut head = [0u8; 8];
    head.copy_from_slice(&key[..8]);
    let span = (u64::MAX / n.max(1)).saturating_mul(SEEK_NEXTS as u64);
    match u64::from_be_bytes(head).checked_add(span) {
        Some(end) => end.to_be_bytes().to_vec(),
        None => ABOVE_ALL.to_vec(),
    }
}

/// `seekrandombounded`: seeks to present keys, bounded by [`bound_after`];
/// the first entry must be the key itself, every entry within the bounds.
pub fn seek_bounded(engine: &dyn Engine, keys: &Keys, picks: Range<u64>) -> anyhow::Result<()> {
    for i in picks {
        let key = keys.present(pick(i, keys.present, 10));
        let upper = bound_after(&key, keys.present);
        let mut first = true;
        let read = engine.scan(&key, &upper, SEEK_NEXTS, &mut |found, len| {
            let in_bounds = if first {
                found == key.as_slice()
            } else {
                found > key.as_slice() && found < upper.as_slice()
            };
            first = false;
            ensure!(
                in_bounds && len == VALUE_LEN,
                "{}: a bounded seek read a wrong entry",
                engine.name()
            );
            Ok(())
        })?;
        ensure!(
            read >= 1,
            "{}: a bounded seek to a present key found nothing",
            engine.name()
        );
    }
    Ok(())
}

/// The empty range of `len` integers of operation `i`.
fn empty_range(gapped: &Gapped, len: u64, i: u64) -> (Key, Key) {
    let at = pick(i, gapped.len(), 6);
    gapped.empty_range(at, len, mix64(i ^ 0x5eed_e4e7))
}

/// `seekempty*`: opens an iterator over each operation's empty range of
/// `len` integers and takes its first item, which must be none.
pub fn seek_empty(
    engine: &dyn Engine,
    gapped: &Gapped,
    len: u64,
    picks: Range<u64>,
) -> anyhow::Result<()> {
    for i in picks {
        let (a, b) = empty_range(gapped, len, i);
        engine.scan(&a, &b, 1, &mut |key, _| {
            bail!(
                "{}: the empty range [{}, {}) of {len} integers returned key {}",
                engine.name(),
                hex(&a),
                hex(&b),
                hex(key)
            )
        })?;
    }
    Ok(())
}

/// Untimed, before a `seekempty*` run: the first [`EMPTY_SAMPLE`] of its
/// ranges are empty in the store itself. An unbounded seek from each
/// range's start (which no range filter serves) must find nothing, or a
/// key at or past the range's end.
pub fn check_empty(engine: &dyn Engine, gapped: &Gapped, len: u64) -> anyhow::Result<()> {
    for i in 0..EMPTY_SAMPLE {
        let (a, b) = empty_range(gapped, len, i);
        engine.scan(&a, &ABOVE_ALL, 1, &mut |key, _| {
            ensure!(
                key >= b.as_slice(),
                "{}: the store holds key {} in the \"empty\" range [{}, {})",
                engine.name(),
                hex(key),
                hex(&a),
                hex(&b)
            );
            Ok(())
        })?;
    }
    Ok(())
}

/// `prefixhit`: prefix scans of present prefixes; each must read exactly
/// the prefix's keys, with their values.
pub fn prefix_hit(
    engine: &dyn Engine,
    prefixed: &Prefixed,
    picks: Range<u64>,
) -> anyhow::Result<()> {
    for i in picks {
        let j = pick(i, prefixed.prefixes(), 8);
        let prefix = prefixed.present(j);
        let read = engine.prefix(&prefix, &mut |key, len| {
            ensure!(
                key.starts_with(&prefix) && len == VALUE_LEN,
                "{}: a prefix scan read a wrong entry",
                engine.name()
            );
            Ok(())
        })?;
        ensure!(
            read as u64 == prefixed.keys_under(j),
            "{}: a prefix scan of {} read {read} keys, not {}",
            engine.name(),
            hex(&prefix),
            prefixed.keys_under(j)
        );
    }
    Ok(())
}

/// `prefixmissing`: prefix scans of prefixes that hold no key; each must
/// read nothing.
pub fn prefix_missing(
    engine: &dyn Engine,
    prefixed: &Prefixed,
    picks: Range<u64>,
) -> anyhow::Result<()> {
    for i in picks {
        let prefix = prefixed.missing(pick(i, prefixed.prefixes(), 9));
        engine.prefix(&prefix, &mut |key, _| {
            bail!(
                "{}: a prefix scan of the missing prefix {} returned key {}",
                engine.name(),
                hex(&prefix),
                hex(key)
            )
        })?;
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::engine::{Pass, Settings};
    use crate::db::stores::Store;
    use crate::db::workload::{self, Workload};
    use crate::db::{ENGINES, open};

    fn settings() -> Settings {
        Settings {
            memtable_bytes: 1 << 20,
            table_bytes: 8 << 20,
            cache_bytes: 1 << 20,
            bits_per_key: 10.0,
            range_bits_per_key: 12.0,
        }
    }

    const N: u64 = 5000;

    fn keys() -> Keys {
        Keys {
            seed: 7,
            present: N,
            missing: N,
        }
    }

    /// A store of `store`'s keys on `name`, loaded and compacted.
    fn loaded(name: &str, store: Store, dir: &std::path::Path) -> anyhow::Result<Box<dyn Engine>> {
        let engine = open(name, dir, &settings(), store, Pass::Timed)?;
        workload::run_fill(engine.as_ref(), &store.fill_keys(7, N)?)?;
        engine.compact()?;
        Ok(engine)
    }

    /// Every scan workload runs on every engine, on one thread and on
    /// three, and does all its operations (each checks its answer).
    #[test]
    fn scan_workloads_run_on_every_engine() -> anyhow::Result<()> {
        for &name in ENGINES {
            for store in [Store::Random, Store::Gapped, Store::Prefixed] {
                let dir = tempfile::tempdir()?;
                let engine = loaded(name, store, dir.path())?;
                let workloads = Workload::READS
                    .into_iter()
                    .filter(|w| w.scans() && w.store() == store);
                for workload in workloads {
                    for threads in [1, 3] {
                        let run =
                            workload::run_read(engine.as_ref(), workload, &keys(), 500, threads)?;
                        assert_eq!(run.ops, 500 * threads as u64, "{name} {}", workload.name());
                    }
                }
            }
        }
        Ok(())
    }

    /// Sift's scan filters answer for the empty ranges and the missing
    /// prefixes: after a full compaction into one table, one probe per
    /// operation, nearly all of them "empty" for ranges of 16 and for
    /// missing prefixes.
    #[test]
    fn sift_counts_its_scan_filters() -> anyhow::Result<()> {
        for (store, workload) in [
            (Store::Gapped, Workload::SeekEmpty16),
            (Store::Prefixed, Workload::PrefixMissing),
        ] {
            let dir = tempfile::tempdir()?;
            let engine = loaded("sift", store, dir.path())?;
            let run = workload::run_read(engine.as_ref(), workload, &keys(), 2000, 1)?;
            let f = run.filters;
            // A range or prefix past the table's ends is not probed.
            assert!(f.probes > 1950, "{}: {f:?}", workload.name());
            assert!(f.negatives > 1900, "{}: {f:?}", workload.name());
            assert_eq!(
                f.negatives + f.false_positives.unwrap_or(0),
                f.probes,
                "{}: every range and prefix is empty",
                workload.name()
            );
        }
        Ok(())
    }

    /// A key where the generators promise none, or a prefix short of a
    /// key, fails the workload loudly, on every engine.
    #[test]
    fn wrong_answers_fail_the_run() -> anyhow::Result<()> {
        for &name in ENGINES {
            let dir = tempfile::tempdir()?;
            let engine = loaded(name, Store::Gapped, dir.path())?;
            let gapped = Gapped::new(7, N)?;
            let (a, _) = empty_range(&gapped, 16, 0);
            engine.put(&a, &[0; VALUE_LEN])?;
            let error = seek_empty(engine.as_ref(), &gapped, 16, 0..1)
                .err()
                .map(|e| format!("{e:#}"))
                .unwrap_or_default();
            assert!(error.contains("empty range"), "{name}: {error:?}");
            assert!(check_empty(engine.as_ref(), &gapped, 16).is_err(), "{name}");

            let dir = tempfile::tempdir()?;
            let engine = loaded(name, Store::Prefixed, dir.path())?;
            let prefixed = Prefixed::new(7, N)?;
            let mut extra = [0u8; 16];
            extra[..8].copy_from_slice(&prefixed.missing(pick(0, prefixed.prefixes(), 9)));
            engine.put(&extra, &[0; VALUE_LEN])?;
            assert!(
                prefix_missing(engine.as_ref(), &prefixed, 0..1).is_err(),
                "{name}"
            );
            extra[..8].copy_from_slice(&prefixed.present(pick(0, prefixed.prefixes(), 8)));
            engine.put(&extra, &[0; VALUE_LEN])?;
            assert!(
                prefix_hit(engine.as_ref(), &prefixed, 0..1).is_err(),
                "{name}"
            );
        }
        Ok(())
    }

    #[test]
    fn bounded_seeks_end_a_few_keys_on() {
        let key = [0x10; 16];
        let upper = bound_after(&key, 1 << 20);
        assert!(upper.as_slice() > key.as_slice());
        let span = u64::from_be_bytes([0x10; 8]) + (u64::MAX >> 20) * SEEK_NEXTS as u64;
        assert_eq!(upper, span.to_be_bytes());
        assert_eq!(bound_after(&[0xff; 16], 1000), ABOVE_ALL.to_vec());
    }
}
