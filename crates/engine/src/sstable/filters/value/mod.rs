//! The value filters of a table, per value index: [`ValueFilterBuilder`]
//! writes the leaf, the block filters (`blocks.rs`) and the heavy hitters
//! (`hitters.rs`), [`ValueFilters`] reads them through the directory in
//! the properties block.

mod blocks;
mod builder;
mod hitters;
mod reader;

pub(crate) use blocks::BlockFilters;
pub(crate) use builder::ValueFilterBuilder;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use hitters::HeavyHitters;
#[cfg(feature = "fuzzing")]
pub(crate) use reader::HEAVY_HITTERS_VERSION;
pub(crate) use reader::{
    ValueFilterEntry, ValueFilters, ValueLeaf, decode_directory, encode_directory,
};
