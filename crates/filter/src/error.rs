//! Errors of the filter library.

use crate::codec::FilterKind;

/// Why an encoded filter could not be decoded. Decoding never panics: any
/// byte string either yields a filter that answers exactly as the encoded one
/// did, or one of these.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ends before a field it must contain.
    #[error("truncated: needed {needed} bytes at offset {offset}, {available} available")]
    Truncated {
        /// Offset of the field that did not fit.
        offset: usize,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left at that offset.
        available: usize,
    },
    /// The first four bytes are not the filter magic.
    #[error("not a Sift filter (bad magic)")]
    BadMagic,
    /// Written by a newer format version than this build reads.
    #[error("unsupported filter format version {0}")]
    UnsupportedVersion(u8),
    /// The kind byte names no filter this build knows.
    #[error("unknown filter kind {0}")]
    UnknownKind(u8),
    /// A valid filter, but of another kind than the caller asked for.
    #[error("expected a {expected:?} filter, found {found:?}")]
    WrongKind {
        /// The kind the caller decodes.
        expected: FilterKind,
        /// The kind the header names.
        found: FilterKind,
    },
    /// A valid kind that answers other queries than the decoder's: a
    /// [`RangeFilter`](crate::RangeFilter) (ranges of `u64` keys) given to
    /// [`AnyFilter::decode`](crate::AnyFilter::decode), which reads key
    /// filters.
    #[error("filter kind {0:?} is not a key filter")]
    NotAKeyFilter(FilterKind),
    /// Built with a hash function this build does not implement.
    #[error("unsupported hash kind {0}")]
    UnsupportedHash(u8),
    /// The stored checksum does not match the bytes.
    #[error("checksum mismatch: stored {stored:#018x}, computed {computed:#018x}")]
    ChecksumMismatch {
        /// Checksum found in the trailer.
        stored: u64,
        /// Checksum of the bytes as read.
        computed: u64,
    },
    /// Bytes follow the last field of the body.
    #[error("{0} unexpected bytes after the filter body")]
    TrailingBytes(usize),
    /// A field holds a value no encoder writes (zero probes, a size that
    /// disagrees with the payload length, a reserved bit set, ...).
    #[error("invalid field: {0}")]
    Invalid(&'static str),
}

/// Errors of filter operations other than decoding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An encoded filter could not be decoded.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// A parameter is out of its documented range.
    #[error("invalid parameter: {0}")]
    InvalidParameter(String),
    /// `remove` of an item the filter does not (or cannot prove it does)
    /// hold. Nothing was changed.
    #[error("item is not in the filter; nothing removed")]
    NotPresent,
    /// The filter cannot take another item without dropping one. Nothing
    /// was changed.
    #[error("filter is full: {0}")]
    Full(&'static str),
    /// A static filter could not be built from its keys: construction
    /// failed under each of the `seeds` seeds it may try. Nothing was
    /// built; the caller still has the keys and can build another kind
    /// from them (a Bloom filter never fails).
    #[error("{kind:?} construction failed under all {seeds} seeds")]
    ConstructionFailed {
        /// The kind that could not be built.
        kind: FilterKind,
        /// Seeds tried.
        seeds: u32,
    },
    /// Two filters that must share a shape (size, probes, hash) do not.
    #[error("shape mismatch: {0}")]
    ShapeMismatch(String),
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
