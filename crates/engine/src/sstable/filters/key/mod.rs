//! The key filter: [`KeyFilterBuilder`] writes it, [`KeyFilter`] reads it.

mod builder;
mod reader;

pub(crate) use builder::{BuiltFilter, FilterOutput, KeyFilterBuilder};
pub(crate) use reader::{FilterLayout, KeyFilter, Probe, encode_partition_index};
