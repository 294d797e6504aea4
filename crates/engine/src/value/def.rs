//! [`IndexDef`] (what a user declares), [`IndexRecord`] (what the manifest
//! stores) and the default leaf shape.

use sift_filter::BloomShape;

use super::extractor::Extractor;
use crate::encoding::{Decoder, put_bytes, put_varint};
use crate::error::{Corrupt, Error, Result};

/// False-positive rate a default leaf aims at for one table's distinct
/// values: one table scanned in vain per hundred that a search rules out.
pub(crate) const DEFAULT_LEAF_FPR: f64 = 0.01;

/// Most probes a leaf may use: `sift-filter`'s own limit for a standard
/// Bloom filter (64 probes target an FPR of 5e-20).
const MAX_PROBES: u32 = 64;

/// Fewest bits a leaf may have: one machine word.
const MIN_LEAF_BITS: u64 = 64;

/// Most bits a leaf may have: 2^36 bits is 8 GiB per table and index, past
/// any table this engine writes; it keeps a damaged manifest from asking
/// for an absurd allocation per table.
pub(crate) const MAX_LEAF_BITS: u64 = 1 << 36;

/// Longest index name, custom extractor name or JSON Pointer accepted:
/// names are for people, and the bound keeps a damaged manifest from
/// allocating.
const MAX_NAME_LEN: usize = 4096;

/// Mean entry size assumed when the database holds no table yet to
/// measure it from (a short key and a small document).
const ASSUMED_ENTRY_BYTES: u64 = 100;

/// An index to declare ([`DbBuilder::value_index`](crate::DbBuilder::value_index))
/// or add ([`Db::add_index`](crate::Db::add_index)): a name, an extractor,
/// and optionally the leaf shape.
///
/// ```
/// use siftdb::{Extractor, IndexDef};
/// let by_city = IndexDef::new("city", Extractor::json_field("/address/city")).leaf_bits(1 << 20);
/// assert_eq!(by_city.name(), "city");
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct IndexDef {
    name: String,
    extractor: Extractor,
    leaf_bits: Option<u64>,
    leaf_probes: Option<u32>,
}

impl IndexDef {
    /// An index called `name` over what `extractor` yields, with the
    /// default leaf shape.
    pub fn new(name: impl Into<String>, extractor: Extractor) -> Self {
        Self {
            name: name.into(),
            extractor,
            leaf_bits: None,
            leaf_probes: None,
        }
    }

    /// Bits of every leaf (`m`, 64 ..= 2^36). Default: enough for the
    /// values of a full table at 1% false positives.
    pub fn leaf_bits(mut self, bits: u64) -> Self {
        self.leaf_bits = Some(bits);
        self
    }

    /// Probes per value (`k`, 1 ..= 64). Default: the optimal count for the
    /// leaf's bits and expected values.
    pub fn leaf_probes(mut self, probes: u32) -> Self {
        self.leaf_probes = Some(probes);
        self
    }

    /// The index's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its extractor.
    #[must_use]
    pub fn extractor(&self) -> &Extractor {
        &self.extractor
    }

    /// Checks the name, the extractor's parameters and an explicit shape.
    pub(crate) fn validate(&self) -> Result<()> {
        let fail = |what: String| {
            Err(Error::InvalidArgument(format!(
                "index {:?}: {what}",
                self.name
            )))
        };
        if self.name.is_empty() || self.name.len() > MAX_NAME_LEN {
            return fail(format!("a name needs 1 ..= {MAX_NAME_LEN} bytes"));
        }
        match &self.extractor {
            Extractor::JsonField(p)
                if p.len() > MAX_NAME_LEN || !(p.is_empty() || p.starts_with('/')) =>
            {
                return fail("a JSON Pointer is empty or starts with '/'".into());
            }
            Extractor::Delimited { column, .. } if *column > u32::MAX as usize => {
                return fail("column past 2^32".into());
            }
            Extractor::Custom { name, .. } if name.is_empty() || name.len() > MAX_NAME_LEN => {
                return fail(format!(
                    "a custom extractor's name needs 1 ..= {MAX_NAME_LEN} bytes"
                ));
            }
            _ => {}
        }
        if self
            .leaf_bits
            .is_some_and(|b| !(MIN_LEAF_BITS..=MAX_LEAF_BITS).contains(&b))
        {
            return fail(format!(
                "leaf bits must be within {MIN_LEAF_BITS} ..= {MAX_LEAF_BITS}"
            ));
        }
        if self
            .leaf_probes
            .is_some_and(|k| !(1..=MAX_PROBES).contains(&k))
        {
            return fail(format!("leaf probes must be within 1 ..= {MAX_PROBES}"));
        }
        Ok(())
    }

    /// The leaf shape: what was asked for, the rest from `expected_values`
    /// (distinct values one table is expected to hold) at
    /// [`DEFAULT_LEAF_FPR`].
    pub(crate) fn shape(&self, expected_values: u64) -> BloomShape {
        let n = expected_values.max(1);
        let bits = self.leaf_bits.unwrap_or_else(|| {
            BloomShape::for_fpr(n, DEFAULT_LEAF_FPR)
                .bits
                .clamp(MIN_LEAF_BITS, MAX_LEAF_BITS)
        });
        let probes = self
            .leaf_probes
            .unwrap_or_else(|| sift_filter::math::optimal_probes(bits, n).clamp(1, MAX_PROBES));
        BloomShape { bits, probes }
    }

    /// How this definition differs from the stored `record`, if it does:
    /// the extractor, or a shape asked for explicitly.
    pub(crate) fn difference(&self, record: &IndexRecord) -> Option<String> {
        if !self.extractor.same_as(&record.extractor) {
            return Some(format!(
                "extractor {} is declared, the database has {}",
                self.extractor.description(),
                record.extractor.description()
            ));
        }
        if let Some(bits) = self.leaf_bits.filter(|&b| b != record.shape.bits) {
            return Some(format!(
                "leaf bits {bits} are declared, the database has {}",
                record.shape.bits
            ));
        }
        if let Some(probes) = self.leaf_probes.filter(|&k| k != record.shape.probes) {
            return Some(format!(
                "leaf probes {probes} are declared, the database has {}",
                record.shape.probes
            ));
        }
        None
    }
}

/// Distinct values one table is expected to hold, for the default shape:
/// entries per table (the larger of the table target and the memtable size,
/// over the mean entry size measured from `stored_bytes` and
/// `stored_entries`, or [`ASSUMED_ENTRY_BYTES`]) times the fraction of
/// entries with a distinct value (`distinct_fraction`, from table
/// properties where known; 1 otherwise, the worst case).
pub(crate) fn expected_values(
    table_bytes: u64,
    stored_bytes: u64,
    stored_entries: u64,
    distinct_fraction: Option<f64>,
) -> u64 {
    let entry_bytes = stored_bytes
        .checked_div(stored_entries)
        .map_or(ASSUMED_ENTRY_BYTES, |b| b.max(1));
    let entries = table_bytes / entry_bytes;
    let fraction = distinct_fraction
        .filter(|f| f.is_finite())
        .unwrap_or(1.0)
        .clamp(0.0, 1.0);
    ((entries as f64 * fraction).ceil() as u64).max(1)
}

/// An index as the manifest stores it. The id is a file number: unique for
/// the database's whole life, so a leaf written for a dropped index is
/// never mistaken for one of a later index of the same name.
#[derive(Clone, Debug)]
pub(crate) struct IndexRecord {
    /// Names the index in table leaf directories.
    pub id: u64,
    /// The user's name.
    pub name: String,
    /// The extractor (a custom one with a function that does nothing,
    /// until the user supplies it).
    pub extractor: Extractor,
    /// Shape of every leaf.
    pub shape: BloomShape,
}

impl PartialEq for IndexRecord {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.name == other.name
            && self.extractor.same_as(&other.extractor)
            && self.shape == other.shape
    }
}

impl Eq for IndexRecord {}

/// Extractor kind byte: whole value.
const KIND_WHOLE: u8 = 0;
/// Extractor kind byte: JSON field.
const KIND_JSON: u8 = 1;
/// Extractor kind byte: delimited column.
const KIND_DELIMITED: u8 = 2;
/// Extractor kind byte: custom function (its name only).
const KIND_CUSTOM: u8 = 3;

impl IndexRecord {
    /// Appends `varint id | bytes name | u8 kind | parameters | varint bits
    /// | varint probes`; parameters are nothing (whole value), `bytes`
    /// pointer (JSON), `varint column | u8 separator` (delimited), `bytes`
    /// name (custom).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, self.id);
        put_bytes(out, self.name.as_bytes());
        match &self.extractor {
            Extractor::WholeValue => out.push(KIND_WHOLE),
            Extractor::JsonField(pointer) => {
                out.push(KIND_JSON);
                put_bytes(out, pointer.as_bytes());
            }
            Extractor::Delimited { column, separator } => {
                out.push(KIND_DELIMITED);
                put_varint(out, *column as u64);
                out.push(*separator);
            }
            Extractor::Custom { name, .. } => {
                out.push(KIND_CUSTOM);
                put_bytes(out, name.as_bytes());
            }
        }
        put_varint(out, self.shape.bits);
        put_varint(out, u64::from(self.shape.probes));
    }

    /// Reads what [`encode`](Self::encode) wrote. A custom extractor comes
    /// back with a function that yields nothing; the opener replaces it.
    pub(crate) fn decode(d: &mut Decoder<'_>) -> Result<Self, Corrupt> {
        let id = d.varint("index id")?;
        let name = text(d, "index name")?;
        let kind_at = d.position() as u64;
        let extractor = match d.u8("extractor kind")? {
            KIND_WHOLE => Extractor::WholeValue,
            KIND_JSON => Extractor::JsonField(text(d, "JSON Pointer")?),
            KIND_DELIMITED => Extractor::Delimited {
                column: d.varint_len(u32::MAX as usize, "column")?,
                separator: d.u8("separator")?,
            },
            KIND_CUSTOM => Extractor::custom(text(d, "custom extractor name")?, |_, _| {}),
            other => {
                return Err(Corrupt::new(
                    kind_at,
                    format!("unknown extractor kind {other}"),
                ));
            }
        };
        let bits_at = d.position() as u64;
        let bits = d.varint("leaf bits")?;
        let probes = d.varint("leaf probes")?;
        if !(MIN_LEAF_BITS..=MAX_LEAF_BITS).contains(&bits)
            || !(1..=u64::from(MAX_PROBES)).contains(&probes)
        {
            return Err(Corrupt::new(
                bits_at,
                format!("impossible leaf shape {bits} bits, {probes} probes"),
            ));
        }
        Ok(Self {
            id,
            name,
            extractor,
            shape: BloomShape {
                bits,
                probes: probes as u32,
            },
        })
    }
}

/// A length-prefixed UTF-8 string of at most [`MAX_NAME_LEN`] bytes.
fn text(d: &mut Decoder<'_>, what: &str) -> Result<String, Corrupt> {
    let at = d.position() as u64;
    let bytes = d.length_prefixed(MAX_NAME_LEN, what)?;
    String::from_utf8(bytes.to_vec()).map_err(|_| Corrupt::new(at, format!("{what} is not UTF-8")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records() -> Vec<IndexRecord> {
        let shape = BloomShape {
            bits: 1000,
            probes: 7,
        };
        [
            Extractor::WholeValue,
            Extractor::json_field("/a/b"),
            Extractor::delimited(3, b';'),
            Extractor::custom("tags", |_, _| {}),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, extractor)| IndexRecord {
            id: 10 + i as u64,
            name: format!("index{i}"),
            extractor,
            shape,
        })
        .collect()
    }

    #[test]
    fn records_round_trip_and_truncations_fail() {
        for record in records() {
            let mut bytes = Vec::new();
            record.encode(&mut bytes);
            let mut d = Decoder::new(&bytes);
            assert_eq!(IndexRecord::decode(&mut d).unwrap(), record);
            assert!(d.is_empty());
            for cut in 0..bytes.len() {
                assert!(IndexRecord::decode(&mut Decoder::new(&bytes[..cut])).is_err());
            }
        }
    }

    #[test]
    fn golden_record_bytes() {
        let mut bytes = Vec::new();
        records()[2].encode(&mut bytes);
        assert_eq!(
            bytes,
            [
                12, 6, b'i', b'n', b'd', b'e', b'x', b'2', 2, 3, b';', 0xe8, 0x07, 7
            ]
        );
    }

    #[test]
    fn damaged_records_are_refused() {
        let decode = |bytes: &[u8]| IndexRecord::decode(&mut Decoder::new(bytes));
        assert!(
            decode(&[1, 1, b'a', 9, 64, 1])
                .unwrap_err()
                .detail
                .contains("kind 9")
        );
        assert!(
            decode(&[1, 1, b'a', 0, 63, 1])
                .unwrap_err()
                .detail
                .contains("shape")
        );
        assert!(decode(&[1, 1, b'a', 0, 64, 0]).is_err());
        assert!(decode(&[1, 1, b'a', 0, 64, 65]).is_err());
        assert!(
            decode(&[1, 1, 0xff, 0, 64, 1])
                .unwrap_err()
                .detail
                .contains("UTF-8")
        );
        assert!(decode(&[1, 1, b'a', 0, 64, 1]).is_ok());
    }

    #[test]
    fn differences_are_named() {
        let record = &records()[1];
        let same = IndexDef::new("index1", Extractor::json_field("/a/b"));
        assert_eq!(same.difference(record), None);
        assert_eq!(
            same.clone()
                .leaf_bits(1000)
                .leaf_probes(7)
                .difference(record),
            None
        );
        let other = IndexDef::new("index1", Extractor::json_field("/a/c"));
        assert!(other.difference(record).unwrap().contains("json /a/c"));
        assert!(
            same.clone()
                .leaf_bits(999)
                .difference(record)
                .unwrap()
                .contains("999")
        );
        assert!(
            same.leaf_probes(3)
                .difference(record)
                .unwrap()
                .contains("probes 3")
        );
    }

    #[test]
    fn validation() {
        let ok = |def: IndexDef| def.validate().is_ok();
        assert!(ok(IndexDef::new("a", Extractor::WholeValue)));
        assert!(!ok(IndexDef::new("", Extractor::WholeValue)));
        assert!(!ok(IndexDef::new("a", Extractor::json_field("a"))));
        assert!(ok(IndexDef::new("a", Extractor::json_field(""))));
        assert!(!ok(IndexDef::new("a", Extractor::custom("", |_, _| {}))));
        assert!(!ok(IndexDef::new("a", Extractor::WholeValue).leaf_bits(10)));
        assert!(!ok(IndexDef::new("a", Extractor::WholeValue).leaf_probes(0)));
        assert!(ok(IndexDef::new("a", Extractor::WholeValue)
            .leaf_bits(64)
            .leaf_probes(64)));
    }

    #[test]
    fn default_shape_aims_at_one_percent() {
        // 64 MiB tables of 100-byte entries: about 671,000 values.
        let n = expected_values(64 << 20, 1000, 10, None);
        assert_eq!(n, (64 << 20) / 100);
        let shape = IndexDef::new("a", Extractor::WholeValue).shape(n);
        let bits_per_value = shape.bits as f64 / n as f64;
        assert!((9.5..9.7).contains(&bits_per_value), "{bits_per_value}");
        assert_eq!(shape.probes, 7);
        let fpr = sift_filter::math::bloom_fpr(shape.bits, n, shape.probes);
        assert!(fpr <= 0.0101, "{fpr}");
        // Half the entries repeat a value: half the bits.
        assert_eq!(expected_values(64 << 20, 1000, 10, Some(0.5)), n / 2);
        assert_eq!(expected_values(1, 0, 0, Some(f64::NAN)), 1);
        let explicit = IndexDef::new("a", Extractor::WholeValue)
            .leaf_bits(4096)
            .shape(n);
        assert_eq!(explicit.bits, 4096);
        assert_eq!(explicit.probes, 1);
    }
}
