//! Search cost of each method over 1000 leaves, and the unit costs behind
//! `CostModel::default()`.
//!
//! Workload: 1000 leaves of 2000 unique values each, 10 bits per value
//! (m = 20,000, k = 7): leaf fill ≈ 0.5, so inner nodes of a hierarchy
//! saturate within two levels; plus a sparse variant (200 values per
//! leaf, same m) where the hierarchy prunes. Queries are absent values,
//! the common case for a selective search. Run with
//! `cargo bench -p sift-value-index`; per-probe figures are printed from
//! the search's `ProbeStats`.

#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented function"
)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use sift_value_index::{BloomShape, KeyHash, Method, ProbeStats, StandardBloom, ValueIndex};

/// Leaves in every benchmark index: the figure.
const LEAVES: u64 = 1_000;
/// Queries per timed iteration, so one iteration is long enough to time.
const QUERIES: u64 = 64;

fn value(i: u64) -> KeyHash {
    KeyHash::of(&i.to_le_bytes())
}

#[expect(clippy::expect_used, reason = "constant, valid bench inputs")]
fn index(values_per_leaf: u64, order: usize) -> ValueIndex {
    let shape = BloomShape {
        bits: 20_000,
        probes: 7,
    };
    let leaves = (0..LEAVES).map(|id| {
        let mut f = StandardBloom::new(shape).expect("valid shape");
        for j in 0..values_per_leaf {
            f.insert(value(id * 1_000_000 + j));
        }
        (id, Arc::new(f))
    });
    ValueIndex::build(shape, order, leaves).expect("valid leaves")
}

/// Runs the query batch by `method`, returning the stats of one batch.
fn batch(ix: &ValueIndex, method: Method) -> ProbeStats {
    let mut stats = ProbeStats::default();
    for q in 0..QUERIES {
        black_box(ix.search(method, value(u64::MAX - q), &mut stats));
    }
    stats
}

fn search(c: &mut Criterion) {
    for (name, per_leaf) in [("sparse", 200), ("half_full", 2_000)] {
        let mut group = c.benchmark_group(format!("search_{name}"));
        group
            .sample_size(20)
            .measurement_time(Duration::from_secs(2));
        for order in [4, 16] {
            let ix = index(per_leaf, order);
            let methods: &[Method] = if order == 4 {
                &[Method::BloomScan, Method::Flat, Method::Hierarchy]
            } else {
                &[Method::Hierarchy]
            };
            for &method in methods {
                let stats = batch(&ix, method);
                eprintln!(
                    "{name} d={order} {method:?}: per query {:?}",
                    per_query(stats)
                );
                group.bench_function(format!("{method:?}_d{order}"), |b| {
                    b.iter(|| batch(&ix, method))
                });
            }
            eprintln!("{name} d={order} plan: {:?}", ix.plan(&Default::default()));
        }
        group.finish();
    }
}

fn per_query(s: ProbeStats) -> [f64; 4] {
    let q = QUERIES as f64;
    [
        s.inner_nodes_probed as f64 / q,
        s.leaves_probed as f64 / q,
        s.leaves_positive as f64 / q,
        s.words_anded as f64 / q,
    ]
}

/// The per-entry part of a table scan: compare one stored 100-byte value
/// with the searched one, entries in memory (a lower bound for the engine,
/// which also decodes blocks).
fn scan_entry(c: &mut Criterion) {
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..10_000u64)
        .map(|i| {
            (
                i.to_be_bytes().repeat(2),
                (i % 251).to_le_bytes().repeat(13)[..100].to_vec(),
            )
        })
        .collect();
    let needle = 7u64.to_le_bytes().repeat(13)[..100].to_vec();
    let mut group = c.benchmark_group("scan");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(2));
    group.bench_function("entries_10000", |b| {
        b.iter(|| {
            entries
                .iter()
                .filter(|(_, v)| black_box(v.as_slice()) == needle.as_slice())
                .count()
        })
    });
    group.finish();
}

criterion_group!(benches, search, scan_entry);
criterion_main!(benches);
