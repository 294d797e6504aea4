//! The value filters of a table, per value index: [`ValueFilterBuilder`]
//! writes the leaf and the block filters (`blocks.rs`), [`ValueFilters`]
//! reads them through the directory in the properties block.

mod blocks;
mod builder;
mod reader;

pub(crate) use blocks::BlockFilters;
pub(crate) use builder::ValueFilterBuilder;
pub(crate) use reader::{
    ValueFilterEntry, ValueFilters, ValueLeaf, decode_directory, encode_directory,
};
