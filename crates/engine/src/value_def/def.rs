//! [`IndexDef`] (what a user declares), [`LeafSizing`] (how its leaves are
//! sized) and [`IndexRecord`] (what the manifest stores).

use sift_filter::BloomShape;

use super::extractor::Extractor;
use super::sizing::{self, DEFAULT_LEAF_FPR, MAX_LEAF_BITS, MIN_LEAF_BITS};
use crate::encoding::{Decoder, put_bytes, put_varint};
use crate::error::{Corrupt, Error, Result};

/// Most probes a fixed leaf shape may use: `sift-filter`'s own limit for a
/// standard Bloom filter (64 probes target an FPR of 5e-20).
const MAX_PROBES: u32 = 64;

/// Longest index name, custom extractor name or JSON Pointer accepted:
/// names are for people, and the bound keeps a damaged manifest from
/// allocating.
const MAX_NAME_LEN: usize = 4096;

/// Mean entry size assumed when the database holds no table yet to
/// measure it from (a short key and a small document).
const ASSUMED_ENTRY_BYTES: u64 = 100;

/// How the leaves of an index are sized.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum LeafSizing {
    /// Each table's leaf is sized for the distinct values that table really
    /// holds, at false-positive rate `fpr`, and rounded up to a size class
    /// (the default, at 1%).
    PerTable {
        /// The target rate of every leaf.
        fpr: f64,
    },
    /// Every leaf has this shape, whatever its table holds
    /// ([`IndexDef::leaf_bits`]; also every index made before leaves were
    /// sized per table).
    Fixed(BloomShape),
}

/// Rates are validated finite numbers, so `==` on them is an equivalence.
impl Eq for LeafSizing {}

impl LeafSizing {
    /// The rate the leaves aim at: for a fixed shape, the engine's default
    /// (it then only sets the block filters' rate).
    #[must_use]
    pub fn target_fpr(&self) -> f64 {
        match self {
            Self::PerTable { fpr } => *fpr,
            Self::Fixed(_) => DEFAULT_LEAF_FPR,
        }
    }

    /// The shape of the leaf of a table holding `distinct` values.
    pub(crate) fn leaf_shape(&self, distinct: u64) -> BloomShape {
        match self {
            Self::PerTable { fpr } => sizing::leaf_shape(distinct, *fpr),
            Self::Fixed(shape) => *shape,
        }
    }

    /// Whether a leaf of `shape` can have been written under this sizing
    /// (a writer never produces another; `verify` reports one that differs).
    pub(crate) fn accepts(&self, shape: BloomShape) -> bool {
        match self {
            Self::PerTable { fpr } => {
                shape.probes == sizing::probes_for(*fpr)
                    && sizing::size_class(shape.bits) == shape.bits
            }
            Self::Fixed(fixed) => *fixed == shape,
        }
    }

    /// How it reads in reports: `"1% per table"` or `"fixed 4096 bits, 3 probes"`.
    #[must_use]
    pub fn description(&self) -> String {
        match self {
            Self::PerTable { fpr } => format!("{}% per table", fpr * 100.0),
            Self::Fixed(shape) => format!("fixed {} bits, {} probes", shape.bits, shape.probes),
        }
    }
}

/// An index to declare ([`DbBuilder::value_index`](crate::DbBuilder::value_index))
/// or add ([`Db::add_index`](crate::Db::add_index)): a name, an extractor,
/// and optionally how its leaves are sized.
///
/// ```
/// use siftdb::{Extractor, IndexDef};
/// let by_city = IndexDef::new("city", Extractor::json_field("/address/city")).leaf_fpr(0.001);
/// assert_eq!(by_city.name(), "city");
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct IndexDef {
    name: String,
    extractor: Extractor,
    leaf_fpr: Option<f64>,
    leaf_bits: Option<u64>,
    leaf_probes: Option<u32>,
}

impl IndexDef {
    /// An index called `name` over what `extractor` yields, its leaves
    /// sized per table at 1% false positives.
    pub fn new(name: impl Into<String>, extractor: Extractor) -> Self {
        Self {
            name: name.into(),
            extractor,
            leaf_fpr: None,
            leaf_bits: None,
            leaf_probes: None,
        }
    }

    /// The false-positive rate each table's leaf aims at (1e-9 ..= 0.5;
    /// default 0.01): the share of tables without the value that a search
    /// reads anyway. Each leaf gets the bits its table's distinct values
    /// need for it.
    pub fn leaf_fpr(mut self, fpr: f64) -> Self {
        self.leaf_fpr = Some(fpr);
        self
    }

    /// Gives every leaf `bits` bits (`m`, 64 ..= 2^36) whatever its table
    /// holds, instead of sizing it per table: for experiments that vary
    /// the leaf size. Not with [`leaf_fpr`](Self::leaf_fpr).
    pub fn leaf_bits(mut self, bits: u64) -> Self {
        self.leaf_bits = Some(bits);
        self
    }

    /// Probes per value (`k`, 1 ..= 64) of the fixed leaves
    /// [`leaf_bits`](Self::leaf_bits) asks for. Default: the optimal count
    /// for the bits and the values a table is expected to hold.
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

    /// Checks the name, the extractor's parameters and the leaf sizing.
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
        if self.leaf_fpr.is_some_and(|p| !sizing::valid_fpr(p)) {
            return fail(format!(
                "a leaf false-positive rate must be within {} ..= {}",
                sizing::MIN_FPR,
                sizing::MAX_FPR
            ));
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
        if self.leaf_probes.is_some() && self.leaf_bits.is_none() {
            return fail("leaf probes are set only with fixed leaf bits".into());
        }
        if self.leaf_fpr.is_some() && self.leaf_bits.is_some() {
            return fail(
                "leaves are sized either per table (a rate) or fixed (bits), not both".into(),
            );
        }
        Ok(())
    }

    /// The sizing asked for; a fixed shape without probes gets the optimal
    /// count for `expected_values` (distinct values one table is expected
    /// to hold).
    pub(crate) fn sizing(&self, expected_values: u64) -> LeafSizing {
        match self.leaf_bits {
            None => LeafSizing::PerTable {
                fpr: self.leaf_fpr.unwrap_or(DEFAULT_LEAF_FPR),
            },
            Some(bits) => LeafSizing::Fixed(BloomShape {
                bits,
                probes: self.leaf_probes.unwrap_or_else(|| {
                    sift_filter::math::optimal_probes(bits, expected_values.max(1))
                        .clamp(1, MAX_PROBES)
                }),
            }),
        }
    }

    /// How this definition differs from the stored `record`, if it does:
    /// the extractor, or a sizing asked for explicitly.
    pub(crate) fn difference(&self, record: &IndexRecord) -> Option<String> {
        if !self.extractor.same_as(&record.extractor) {
            return Some(format!(
                "extractor {} is declared, the database has {}",
                self.extractor.description(),
                record.extractor.description()
            ));
        }
        let stored = record.sizing;
        let (fixed_bits, fixed_probes, fpr) = match stored {
            LeafSizing::Fixed(shape) => (Some(shape.bits), Some(shape.probes), None),
            LeafSizing::PerTable { fpr } => (None, None, Some(fpr)),
        };
        let declared = if let Some(p) = self.leaf_fpr.filter(|&p| Some(p) != fpr) {
            format!("a leaf rate of {p}")
        } else if let Some(bits) = self.leaf_bits.filter(|&b| Some(b) != fixed_bits) {
            format!("leaf bits {bits}")
        } else if let Some(k) = self.leaf_probes.filter(|&k| Some(k) != fixed_probes) {
            format!("leaf probes {k}")
        } else {
            return None;
        };
        Some(format!(
            "{declared} declared, the database has leaves {}",
            stored.description()
        ))
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
    /// How its leaves are sized.
    pub sizing: LeafSizing,
}

impl PartialEq for IndexRecord {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.name == other.name
            && self.extractor.same_as(&other.extractor)
            && self.sizing == other.sizing
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
    /// Appends `varint id | bytes name | u8 kind | parameters | sizing`;
    /// parameters are nothing (whole value), `bytes` pointer (JSON),
    /// `varint column | u8 separator` (delimited), `bytes` name (custom);
    /// sizing is `varint bits | varint probes` for a fixed shape, `varint 0
    /// | f64 rate` (8 bytes, little-endian IEEE 754) for leaves sized per
    /// table. A reader that predates per-table sizing refuses 0 bits as an
    /// impossible shape instead of misreading it.
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
        match self.sizing {
            LeafSizing::Fixed(shape) => {
                put_varint(out, shape.bits);
                put_varint(out, u64::from(shape.probes));
            }
            LeafSizing::PerTable { fpr } => {
                put_varint(out, 0);
                out.extend_from_slice(&fpr.to_bits().to_le_bytes());
            }
        }
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
        let sizing = if bits == 0 {
            let fpr = f64::from_bits(d.u64("leaf false-positive rate")?);
            if !sizing::valid_fpr(fpr) {
                return Err(Corrupt::new(
                    bits_at,
                    format!("impossible leaf false-positive rate {fpr}"),
                ));
            }
            LeafSizing::PerTable { fpr }
        } else {
            let probes = d.varint("leaf probes")?;
            if !(MIN_LEAF_BITS..=MAX_LEAF_BITS).contains(&bits)
                || !(1..=u64::from(MAX_PROBES)).contains(&probes)
            {
                return Err(Corrupt::new(
                    bits_at,
                    format!("impossible leaf shape {bits} bits, {probes} probes"),
                ));
            }
            LeafSizing::Fixed(BloomShape {
                bits,
                probes: probes as u32,
            })
        };
        Ok(Self {
            id,
            name,
            extractor,
            sizing,
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
        let fixed = LeafSizing::Fixed(BloomShape {
            bits: 1000,
            probes: 7,
        });
        [
            (Extractor::WholeValue, fixed),
            (
                Extractor::json_field("/a/b"),
                LeafSizing::PerTable { fpr: 0.01 },
            ),
            (Extractor::delimited(3, b';'), fixed),
            (
                Extractor::custom("tags", |_, _| {}),
                LeafSizing::PerTable { fpr: 0.001 },
            ),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, (extractor, sizing))| IndexRecord {
            id: 10 + i as u64,
            name: format!("index{i}"),
            extractor,
            sizing,
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
        // Sized per table at 1%: bits 0, then 0.01 as IEEE 754.
        let mut bytes = Vec::new();
        records()[1].encode(&mut bytes);
        let mut want = vec![
            11, 6, b'i', b'n', b'd', b'e', b'x', b'1', 1, 4, b'/', b'a', b'/', b'b', 0,
        ];
        want.extend_from_slice(&0x3f84_7ae1_47ae_147b_u64.to_le_bytes());
        assert_eq!(bytes, want);
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
        let rate = |fpr: f64| {
            let mut bytes = vec![1, 1, b'a', 0, 0];
            bytes.extend_from_slice(&fpr.to_bits().to_le_bytes());
            decode(&bytes)
        };
        assert!(rate(0.01).is_ok());
        for bad in [0.0, 0.9, -0.01, f64::NAN, f64::INFINITY, 1e-12] {
            assert!(rate(bad).unwrap_err().detail.contains("rate"), "{bad}");
        }
    }

    #[test]
    fn differences_are_named() {
        let record = &records()[1];
        let same = IndexDef::new("index1", Extractor::json_field("/a/b"));
        assert_eq!(same.difference(record), None);
        assert_eq!(same.clone().leaf_fpr(0.01).difference(record), None);
        let other = IndexDef::new("index1", Extractor::json_field("/a/c"));
        assert!(other.difference(record).unwrap().contains("json /a/c"));
        let stricter = same.clone().leaf_fpr(0.001).difference(record).unwrap();
        assert!(
            stricter.contains("rate of 0.001") && stricter.contains("1% per table"),
            "{stricter}"
        );
        assert!(same.clone().leaf_bits(999).difference(record).is_some());
        let fixed = &records()[0];
        let def = IndexDef::new("index0", Extractor::WholeValue);
        assert_eq!(
            def.clone().leaf_bits(1000).leaf_probes(7).difference(fixed),
            None
        );
        assert!(
            def.clone()
                .leaf_bits(999)
                .difference(fixed)
                .unwrap()
                .contains("999")
        );
        assert!(
            def.clone()
                .leaf_bits(1000)
                .leaf_probes(3)
                .difference(fixed)
                .is_some()
        );
        assert!(def.leaf_fpr(0.01).difference(fixed).is_some());
    }

    #[test]
    fn validation() {
        let ok = |def: IndexDef| def.validate().is_ok();
        let def = || IndexDef::new("a", Extractor::WholeValue);
        assert!(ok(def()));
        assert!(!ok(IndexDef::new("", Extractor::WholeValue)));
        assert!(!ok(IndexDef::new("a", Extractor::json_field("a"))));
        assert!(ok(IndexDef::new("a", Extractor::json_field(""))));
        assert!(!ok(IndexDef::new("a", Extractor::custom("", |_, _| {}))));
        assert!(!ok(def().leaf_bits(10)));
        assert!(!ok(def().leaf_bits(64).leaf_probes(0)));
        assert!(ok(def().leaf_bits(64).leaf_probes(64)));
        assert!(!ok(def().leaf_probes(3)), "probes without fixed bits");
        assert!(ok(def().leaf_fpr(0.001)));
        assert!(!ok(def().leaf_fpr(0.0)));
        assert!(!ok(def().leaf_fpr(0.6)));
        assert!(!ok(def().leaf_fpr(f64::NAN)));
        assert!(!ok(def().leaf_fpr(0.01).leaf_bits(1024)), "both sizings");
    }

    #[test]
    fn sizings() {
        let per_table = IndexDef::new("a", Extractor::WholeValue).sizing(1_000);
        assert_eq!(per_table, LeafSizing::PerTable { fpr: 0.01 });
        let shape = per_table.leaf_shape(135_000);
        assert_eq!(shape.probes, 7);
        assert!(per_table.accepts(shape));
        assert!(
            !per_table.accepts(BloomShape {
                bits: 1_000,
                probes: 7
            }),
            "not a class"
        );
        assert!(!per_table.accepts(BloomShape {
            bits: 1_024,
            probes: 6
        }));
        // 64 MiB tables of 100-byte entries: about 671,000 values.
        let n = expected_values(64 << 20, 1000, 10, None);
        assert_eq!(n, (64 << 20) / 100);
        let fixed = IndexDef::new("a", Extractor::WholeValue)
            .leaf_bits(4096)
            .sizing(n);
        assert_eq!(
            fixed.leaf_shape(7),
            BloomShape {
                bits: 4096,
                probes: 1
            }
        );
        assert_eq!(fixed.target_fpr(), DEFAULT_LEAF_FPR);
        assert_eq!(expected_values(64 << 20, 1000, 10, Some(0.5)), n / 2);
        assert_eq!(expected_values(1, 0, 0, Some(f64::NAN)), 1);
    }
}
