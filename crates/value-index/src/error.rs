//! Errors of the value index.

use std::fmt;

use sift_filter::BloomShape;

/// Why an index operation was refused. Nothing was changed when one is
/// returned: every check runs before the first mutation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A leaf filter's shape differs from the index's: its bits could not
    /// be OR-ed with the others, nor probed at the same positions.
    ShapeMismatch {
        /// The shape every leaf of the index has.
        expected: BloomShape,
        /// The shape of the refused filter.
        found: BloomShape,
    },
    /// `insert` of a leaf id the index already holds.
    DuplicateLeaf(u64),
    /// `remove` of a leaf id the index does not hold.
    UnknownLeaf(u64),
    /// A hierarchy order below 2: an inner node must be able to hold two
    /// children or the tree cannot grow.
    InvalidOrder(usize),
    /// The index's shape is not a valid Bloom shape (zero bits, or a probe
    /// count outside what `sift-filter` accepts).
    InvalidShape(BloomShape),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ShapeMismatch { expected, found } => {
                write!(
                    f,
                    "leaf shape {found:?} differs from index shape {expected:?}"
                )
            }
            Self::DuplicateLeaf(id) => write!(f, "leaf {id} is already in the index"),
            Self::UnknownLeaf(id) => write!(f, "leaf {id} is not in the index"),
            Self::InvalidOrder(d) => write!(f, "hierarchy order {d} is below 2"),
            Self::InvalidShape(shape) => write!(f, "invalid Bloom shape {shape:?}"),
        }
    }
}

impl std::error::Error for Error {}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Checks that `shape` is one `sift-filter` can build a filter of.
pub(crate) fn check_shape(shape: BloomShape) -> Result<()> {
    sift_filter::StandardBloom::new(shape)
        .map(drop)
        .map_err(|_| Error::InvalidShape(shape))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_leaf_and_shapes() {
        let a = BloomShape {
            bits: 64,
            probes: 3,
        };
        let b = BloomShape {
            bits: 128,
            probes: 3,
        };
        let msg = Error::ShapeMismatch {
            expected: a,
            found: b,
        }
        .to_string();
        assert!(
            msg.contains("bits: 128") && msg.contains("bits: 64"),
            "{msg}"
        );
        assert_eq!(
            Error::DuplicateLeaf(7).to_string(),
            "leaf 7 is already in the index"
        );
        assert_eq!(
            Error::UnknownLeaf(9).to_string(),
            "leaf 9 is not in the index"
        );
        assert!(Error::InvalidOrder(1).to_string().contains('1'));
    }

    #[test]
    fn shape_check_follows_the_filter_crate() {
        assert!(
            check_shape(BloomShape {
                bits: 64,
                probes: 3
            })
            .is_ok()
        );
        let zero = BloomShape { bits: 0, probes: 3 };
        assert_eq!(check_shape(zero), Err(Error::InvalidShape(zero)));
        let none = BloomShape {
            bits: 64,
            probes: 0,
        };
        assert_eq!(check_shape(none), Err(Error::InvalidShape(none)));
    }
}
