//! # sift-value-index
//!
//! Search by value for the Sift LSM store: "which keys have this value?".
//! Pure data structures and a pure planner: no I/O, no threads.
//!
//! ## The idea
//!
//! Each SSTable carries, per value index, a standard Bloom filter over the
//! hashes of its entries' values: a *leaf*, named by the table's file
//! number. A search hashes the value once ([`KeyHash::of`]) and must name
//! every leaf whose filter answers "maybe" — never missing one that holds
//! the value — so the engine scans only those tables and validates what it
//! finds. All leaves of one index share one [`BloomShape`] (`m` bits, `k`
//! probes, one hash function), so their bits line up and can be combined.
//! This crate finds the matching leaves without probing each one:
//!
//! - [`Hierarchy`] — Bloofi (Crainiceanu & Lemire, *Bloofi: Multidimensional
//!   Bloom filters*, Information Systems 2015), used for non-key search by
//!   Macyna & Ordonez (*A Bloom Filter Hierarchy for Non-key Search in
//!   Key-Value Stores*): a B+-tree of order `d` whose inner nodes hold the
//!   bitwise OR of their children. A search descends only into children
//!   that match, so a selective value costs `O(d · log_d n)` node probes.
//!   Tables come and go with compaction; the tree is updated along one root
//!   path per change, never rebuilt.
//! - [`BitSliced`] — the flat layout: bit `j` of every leaf stored
//!   together as a row with one bit per leaf, so a query ANDs its `k` rows
//!   (`k · n / 64` word operations) and reads the surviving columns.
//! - [`ValueIndex`] keeps the leaves and both structures in sync, searches
//!   by any [`Method`] (recording [`ProbeStats`]), summarises itself in a
//!   [`Profile`], and [`plan`]s the cheapest method under a [`CostModel`].
//!
//! ## The saturation problem
//!
//! Every node has the leaves' `m` bits, but an inner node holds the values
//! of all leaves below it. Near the root it is nearly all ones, and a node
//! with fill `f` matches a value none of its leaves holds with chance about
//! `f^k`: a saturated node prunes nothing, and the hierarchy degrades to
//! probing every leaf plus the inner nodes on top. Values of low
//! cardinality are worse still: they really are in nearly every leaf, so
//! no filter method can prune. The bit-sliced layout never saturates (no
//! bit is an OR of leaves) but always pays `k · n / 64` words. All filter
//! methods return the same candidates, so choosing among them is a question
//! of cost only, which the [`planner`] answers from measured fill ratios:
//! [`Estimates::cheapest_probe`] for a caller that always probes (the
//! engine, which decides on a scan afterwards, knowing the candidates),
//! [`Estimates::cheapest`] with [`Method::Scan`] among the choices.

mod bitsliced;
mod error;
mod hierarchy;
mod index;
pub mod planner;
mod probes;
mod profile;
mod stats;
#[cfg(test)]
mod testutil;

pub use bitsliced::BitSliced;
pub use error::{Error, Result};
pub use hierarchy::{Hierarchy, InnerLevel};
pub use index::ValueIndex;
pub use planner::{CostModel, Estimates, plan};
pub use profile::Profile;
pub use sift_filter::{BloomShape, KeyHash, StandardBloom};
pub use stats::{Method, ProbeStats};
