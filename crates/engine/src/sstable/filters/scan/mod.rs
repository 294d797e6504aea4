//! The scan filters (prefix and range): [`ScanFilterBuilder`] writes them,
//! [`ScanFilters`] reads them.

mod builder;
mod reader;

pub(crate) use builder::ScanFilterBuilder;
pub(crate) use reader::{ScanFilters, ScanProbe, common_prefix};
