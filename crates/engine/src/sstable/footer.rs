//! The fixed-size footer at the end of every table: where the index, filter
//! and properties blocks are, the format version, a checksum, and a magic.

#![deny(clippy::indexing_slicing)]

use super::filters::key::FilterLayout;
use super::index::TWO_LEVEL_VERSION;
use super::table_index::IndexLayout;
use super::trailer::BlockHandle;
use crate::encoding::{Decoder, checksum, checksum_matches};
use crate::error::Corrupt;

/// Footer length: three handles of two `u64` each (48), filter layout
/// byte, index layout byte, blocks per index partition `u16`, version
/// `u32`, checksum `u32`, magic (4).
pub(crate) const FOOTER_LEN: usize = 64;

/// Last four bytes of every table: `"SFTB"` (Sift TaBle), distinct from the
/// filter envelope's `"SFLT"`.
pub(crate) const MAGIC: [u8; 4] = *b"SFTB";

/// The table format this build writes: 2 added the value filter directory
/// to the properties; 3 sizes each leaf for its table and adds block value
/// filters to the directory; 4 adds the scan filters (prefix and range
/// filter) and their handle at the end of the properties; 5 lays the index
/// out to be searched where it lies (`index.rs`); 6 stores the index keys
/// past their prefix, as user keys where it can, and block ends in 4 bytes
/// where they fit; 7 ends each value filter directory entry with the
/// index's heavy hitters in the table; 8 may split the index in two levels
/// (the footer's index layout). A reader accepts 1 to 8 and refuses others
/// rather than guessing.
pub(crate) const FORMAT_VERSION: u32 = TWO_LEVEL_VERSION;

/// The oldest format version still read (tables without value filters).
const OLDEST_VERSION: u32 = 1;

/// Where the checksum sits; it covers every byte before it.
const CHECKSUM_AT: usize = 56;

/// The decoded footer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Footer {
    /// The index block, or the top level of a two-level index.
    pub index: BlockHandle,
    /// How to read `index`.
    pub index_layout: IndexLayout,
    /// The filter block, or the partition index (zero when no filter).
    pub filter: BlockHandle,
    /// The properties block.
    pub properties: BlockHandle,
    /// How to read `filter`.
    pub filter_layout: FilterLayout,
    /// Format version ([`FORMAT_VERSION`] when writing).
    pub version: u32,
}

impl Footer {
    /// The 64 footer bytes.
    pub(crate) fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut out = Vec::with_capacity(FOOTER_LEN);
        for handle in [self.index, self.filter, self.properties] {
            out.extend_from_slice(&handle.offset.to_le_bytes());
            out.extend_from_slice(&handle.size.to_le_bytes());
        }
        out.push(self.filter_layout as u8);
        let (layout, per_partition) = self.index_layout.encode();
        out.push(layout);
        out.extend_from_slice(&per_partition.to_le_bytes());
        out.extend_from_slice(&self.version.to_le_bytes());
        let sum = checksum(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out.extend_from_slice(&MAGIC);
        let mut fixed = [0; FOOTER_LEN];
        fixed.copy_from_slice(&out);
        fixed
    }

    /// Decodes the last [`FOOTER_LEN`] bytes of a table. Checks, in order:
    /// magic, version, checksum, filter layout, index layout (zero before
    /// format 8).
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, Corrupt> {
        if bytes.len() != FOOTER_LEN {
            return Err(Corrupt::new(
                0,
                format!("footer of {} bytes, expected {FOOTER_LEN}", bytes.len()),
            ));
        }
        let mut d = Decoder::new(bytes);
        let mut handles = [BlockHandle::default(); 3];
        for handle in &mut handles {
            handle.offset = d.u64("handle offset")?;
            handle.size = d.u64("handle size")?;
        }
        let layout = d.u8("filter layout")?;
        let index_byte = d.u8("index layout")?;
        let per_partition = d.u16("blocks per index partition")?;
        let version = d.u32("format version")?;
        let stored = d.u32("footer checksum")?;
        if d.bytes(4, "magic")? != MAGIC {
            return Err(Corrupt::new(60, "not a Sift table (bad magic)"));
        }
        if !(OLDEST_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(Corrupt::new(
                52,
                format!("unsupported table format version {version}"),
            ));
        }
        if !checksum_matches(bytes.get(..CHECKSUM_AT).unwrap_or_default(), stored) {
            return Err(Corrupt::new(CHECKSUM_AT as u64, "footer checksum mismatch"));
        }
        let filter_layout = FilterLayout::from_u8(layout)
            .ok_or_else(|| Corrupt::new(48, format!("unknown filter layout {layout}")))?;
        let index_layout = if version >= TWO_LEVEL_VERSION {
            IndexLayout::decode(index_byte, per_partition)
        } else {
            (index_byte == 0 && per_partition == 0).then_some(IndexLayout::Whole)
        };
        let index_layout = index_layout.ok_or_else(|| {
            Corrupt::new(
                49,
                format!("unknown index layout {index_byte}, {per_partition} blocks per partition"),
            )
        })?;
        let [index, filter, properties] = handles;
        Ok(Self {
            index,
            index_layout,
            filter,
            properties,
            filter_layout,
            version,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Footer {
        Footer {
            index: BlockHandle {
                offset: 0x1234,
                size: 0x56,
            },
            index_layout: IndexLayout::TwoLevel {
                per_partition: 0x0102,
            },
            filter: BlockHandle {
                offset: 0x1000,
                size: 0x200,
            },
            properties: BlockHandle {
                offset: 0x1300,
                size: 0x40,
            },
            filter_layout: FilterLayout::Partitioned,
            version: FORMAT_VERSION,
        }
    }

    #[test]
    fn golden_layout() {
        let bytes = sample().encode();
        assert_eq!(&bytes[0..8], &0x1234u64.to_le_bytes());
        assert_eq!(&bytes[8..16], &0x56u64.to_le_bytes());
        assert_eq!(&bytes[16..24], &0x1000u64.to_le_bytes());
        assert_eq!(&bytes[24..32], &0x200u64.to_le_bytes());
        assert_eq!(&bytes[32..40], &0x1300u64.to_le_bytes());
        assert_eq!(&bytes[40..48], &0x40u64.to_le_bytes());
        assert_eq!(&bytes[48..52], &[2, 1, 0x02, 0x01]);
        assert_eq!(&bytes[52..56], &[8, 0, 0, 0]);
        assert_eq!(&bytes[56..60], &checksum(&bytes[..56]).to_le_bytes());
        assert_eq!(&bytes[60..64], b"SFTB");
        assert_eq!(Footer::decode(&bytes), Ok(sample()));
    }

    #[test]
    fn every_flipped_byte_is_refused() {
        let bytes = sample().encode();
        for i in 0..FOOTER_LEN {
            let mut bad = bytes;
            bad[i] ^= 0x04;
            assert!(Footer::decode(&bad).is_err(), "flip at {i}");
        }
        assert!(Footer::decode(&bytes[1..]).is_err());
    }

    #[test]
    fn versions_1_to_8_are_read_others_refused() {
        for version in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] {
            let footer = Footer {
                version,
                index_layout: IndexLayout::Whole,
                ..sample()
            };
            let decoded = Footer::decode(&footer.encode());
            assert_eq!(decoded.is_ok(), (1..=8).contains(&version), "{version}");
        }
    }

    #[test]
    fn a_two_level_index_is_read_from_format_8_only() {
        for version in 1..=8 {
            let footer = Footer {
                version,
                ..sample()
            };
            let decoded = Footer::decode(&footer.encode());
            assert_eq!(decoded.is_ok(), version == 8, "{version}");
        }
        for (layout, per_partition) in [(1u8, 0u16), (2, 4), (0, 4)] {
            let mut bytes = sample().encode();
            bytes[49] = layout;
            bytes[50..52].copy_from_slice(&per_partition.to_le_bytes());
            let sum = checksum(&bytes[..CHECKSUM_AT]);
            bytes[CHECKSUM_AT..CHECKSUM_AT + 4].copy_from_slice(&sum.to_le_bytes());
            assert!(Footer::decode(&bytes).is_err(), "{layout} {per_partition}");
        }
    }
}
