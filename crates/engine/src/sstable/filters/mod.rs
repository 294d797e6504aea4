//! Every filter a table carries, one folder per family, each with the
//! builder that writes it in the table's single pass and the reader that
//! decodes it at open:
//!
//! - `key/`: the key filter, whole or partitioned, that point lookups ask;
//! - `scan/`: the prefix and range filters that scans and seeks ask;
//! - `value/`: per value index, the leaf and the block filters that a
//!   search by value asks.
//!
//! Damage in any of them never fails a read: an unreadable filter answers
//! "may contain", and `verify` reports it.

pub(crate) mod key;
pub(crate) mod scan;
pub(crate) mod value;
