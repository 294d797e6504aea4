//! What a value index is: its definition as a user declares it
//! ([`IndexDef`], `def.rs`), what it takes from each value ([`Extractor`],
//! with the JSON Pointer reader in `json_pointer.rs`), how its filters are
//! sized (`sizing.rs`), and the record the manifest keeps ([`IndexRecord`]).
//!
//! Table format (`sstable/filters/`) and the search (`db/value/`) both build
//! on this; it imports nothing above `encoding` and `error`.

mod def;
mod extractor;
mod json_pointer;
pub(crate) mod sizing;

pub use def::{IndexDef, LeafSizing};
pub(crate) use def::{IndexRecord, expected_values};
pub use extractor::{ExtractFn, Extractor};
