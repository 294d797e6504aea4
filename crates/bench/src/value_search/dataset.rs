//! One shape's records made concrete: the load (a write stream with
//! updates, rendered before any timing), the answer every query must get,
//! and the values each query class asks for.
//!
//! Record `i` has key `keys[i]` and final value id `values[i]`. The load
//! writes every record once in a shuffled order (fillrandom); 10% of them
//! are first written with an earlier value and rewritten with their final
//! one later in the stream (up to half a load later), so validation and
//! the exact index's read-before-write have work to do. Nothing is random
//! at run time: the keys of each value are known before the store is
//! asked, sorted, grouped by a counting sort.

use std::ops::Range;

use sift_filter::mix64;
use siftdb::Extractor;

use super::rng::SplitMix64;
use super::shapes::{Population, Shape, Table};

/// One record in ten is written twice.
const UPDATE_ONE_IN: u64 = 10;

/// Salts of the independent random streams of a dataset.
const SALT_POPULATE: u64 = 1;
const SALT_LOAD: u64 = 2;
const SALT_NOISE: u64 = 3;
const SALT_QUERY: u64 = 4;

/// Which values the queries ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// Each stored value with equal chance.
    Uniform,
    /// The value of a uniformly random record: by frequency.
    Frequency,
    /// Values never stored, in the same format.
    Absent,
}

impl Class {
    /// Every class, in report order.
    pub const ALL: [Self; 3] = [Self::Uniform, Self::Frequency, Self::Absent];

    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Uniform => "uniform",
            Self::Frequency => "frequency",
            Self::Absent => "absent",
        }
    }
}

/// One write of the load.
pub struct Write<'a> {
    /// Primary key.
    pub key: &'a [u8],
    /// The whole record stored under it.
    pub record: &'a [u8],
    /// Its indexed field, as the extractor yields it.
    pub value: &'a [u8],
}

/// One query: the value's text and its id (`None` for an absent value).
pub struct Query {
    /// What is searched.
    pub value: String,
    /// Its id, when stored.
    pub id: Option<u32>,
}

/// A write of the stream: the record and where its bytes are.
struct Span {
    record: u32,
    value: Range<u32>,
    bytes: Range<u32>,
}

/// The records of one shape, the load and the answers.
pub struct Dataset {
    shape: Shape,
    table: Box<dyn Table>,
    seed: u64,
    keys: Vec<Vec<u8>>,
    values: Vec<u32>,
    distinct: u32,
    /// `members[starts[id]..starts[id + 1]]`: records of value `id`, by key.
    starts: Vec<u32>,
    members: Vec<u32>,
    /// Ids with at least one record.
    present: Vec<u32>,
    /// The writes, in load order, over `bytes`.
    writes: Vec<Span>,
    bytes: Vec<u8>,
}

impl Dataset {
    /// `records` records of `shape`, from `seed`.
    pub fn new(shape: Shape, seed: u64, records: u64) -> anyhow::Result<Self> {
        anyhow::ensure!(
            (1..=u64::from(u32::MAX / 2)).contains(&records),
            "records must be within 1 ..= 2^31 - 1"
        );
        let table = shape.table();
        let salt = |s: u64| s ^ ((shape as u64) << 8);
        let Population {
            keys,
            values,
            distinct,
        } = table.populate(records, &mut SplitMix64::new(seed, salt(SALT_POPULATE)));
        anyhow::ensure!(
            keys.iter().all(|k| k.first() != Some(&0xff)),
            "a primary key starts with 0xff"
        );
        let (starts, members) = group(&keys, &values, distinct);
        let present = (0..distinct)
            .filter(|&id| starts[id as usize + 1] > starts[id as usize])
            .collect();
        let mut data = Self {
            shape,
            table,
            seed,
            keys,
            values,
            distinct,
            starts,
            members,
            present,
            writes: Vec::new(),
            bytes: Vec::new(),
        };
        data.render(SplitMix64::new(seed, salt(SALT_LOAD)), salt(SALT_NOISE))?;
        Ok(data)
    }

    /// Builds the write stream: each record at its shuffled position; an
    /// updated one first with an earlier value there, then with its final
    /// value 1 ..= n/2 positions later.
    fn render(&mut self, mut rng: SplitMix64, noise_salt: u64) -> anyhow::Result<()> {
        let n = self.keys.len() as u64;
        let mut order: Vec<u32> = (0..n as u32).collect();
        rng.shuffle(&mut order);
        // (slot, record, value id, version): first writes at even slots,
        // rewrites at odd ones, so a rewrite never precedes its record.
        let mut events: Vec<(u64, u32, u32, u64)> = Vec::with_capacity(order.len() * 11 / 10);
        for (p, &r) in order.iter().enumerate() {
            let p = p as u64;
            let last = self.values[r as usize];
            if rng.below(UPDATE_ONE_IN) == 0 {
                let first = self.table.earlier(last, self.distinct, &mut rng);
                events.push((2 * p, r, first, 0));
                let later = p + 1 + rng.below((n / 2).max(1));
                events.push((2 * later + 1, r, last, 1));
            } else {
                events.push((2 * p, r, last, 0));
            }
        }
        events.sort_by_key(|e| e.0);
        for (_, record, id, version) in events {
            let noise = mix64(self.seed ^ mix64(noise_salt ^ ((u64::from(record) << 1) | version)));
            let at = |len: usize| u32::try_from(len);
            let text = self.table.value_text(id);
            let start = at(self.bytes.len())?;
            self.bytes.extend_from_slice(text.as_bytes());
            let mid = at(self.bytes.len())?;
            self.bytes.extend(self.table.record(&text, noise));
            let end = at(self.bytes.len())?;
            self.writes.push(Span {
                record,
                value: start..mid,
                bytes: mid..end,
            });
        }
        Ok(())
    }

    /// The shape.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The extractor of the indexed column.
    pub fn extractor(&self) -> Extractor {
        self.table.extractor()
    }

    /// Records (distinct keys).
    pub fn records(&self) -> u64 {
        self.keys.len() as u64
    }

    /// Distinct values stored.
    pub fn distinct(&self) -> u64 {
        self.present.len() as u64
    }

    /// Writes of the load (records plus rewrites).
    pub fn write_count(&self) -> u64 {
        self.writes.len() as u64
    }

    /// The writes, in load order.
    pub fn writes(&self) -> impl Iterator<Item = Write<'_>> {
        self.writes.iter().map(|w| Write {
            key: &self.keys[w.record as usize],
            record: &self.bytes[w.bytes.start as usize..w.bytes.end as usize],
            value: &self.bytes[w.value.start as usize..w.value.end as usize],
        })
    }

    /// Mean bytes of a record as stored.
    pub fn mean_record_bytes(&self) -> f64 {
        let total: u64 = self
            .writes
            .iter()
            .map(|w| u64::from(w.bytes.end - w.bytes.start))
            .sum();
        total as f64 / self.writes.len().max(1) as f64
    }

    /// The keys whose final value is `id`, sorted.
    pub fn expected(&self, id: u32) -> impl ExactSizeIterator<Item = &[u8]> {
        let id = id as usize;
        let range = match (self.starts.get(id), self.starts.get(id + 1)) {
            (Some(&from), Some(&to)) => from as usize..to as usize,
            _ => 0..0,
        };
        self.members[range]
            .iter()
            .map(|&r| self.keys[r as usize].as_slice())
    }

    /// Query `q` of `class` in stream `stream` (one stream per repetition):
    /// the same on every machine and for every method.
    pub fn query(&self, class: Class, stream: u64, q: u64) -> Query {
        let salt = SALT_QUERY ^ ((class as u64) << 4) ^ ((self.shape as u64) << 8) ^ (stream << 16);
        let mut rng = SplitMix64::new(self.seed ^ mix64(q), salt);
        let id = match class {
            Class::Uniform => Some(self.present[rng.below(self.present.len() as u64) as usize]),
            Class::Frequency => Some(self.values[rng.below(self.records()) as usize]),
            Class::Absent => None,
        };
        let text_id = id.unwrap_or_else(|| {
            self.distinct + rng.below(u64::from(self.table.absent(self.distinct))) as u32
        });
        Query {
            value: self.table.value_text(text_id),
            id,
        }
    }
}

/// Record indices grouped by value id, each group sorted by key.
fn group(keys: &[Vec<u8>], values: &[u32], distinct: u32) -> (Vec<u32>, Vec<u32>) {
    let mut by_key: Vec<u32> = (0..keys.len() as u32).collect();
    by_key.sort_unstable_by(|&a, &b| keys[a as usize].cmp(&keys[b as usize]));
    let mut starts = vec![0u32; distinct as usize + 1];
    for &v in values {
        starts[v as usize + 1] += 1;
    }
    for id in 0..distinct as usize {
        starts[id + 1] += starts[id];
    }
    let mut fill = starts.clone();
    let mut members = vec![0u32; keys.len()];
    for r in by_key {
        let slot = &mut fill[values[r as usize] as usize];
        members[*slot as usize] = r;
        *slot += 1;
    }
    (starts, members)
}

#[cfg(test)]
#[path = "dataset_tests.rs"]
mod tests;
