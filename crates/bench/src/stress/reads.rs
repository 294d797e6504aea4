//! The workers' reads: point reads, bounded ranges, prefix scans and
//! searches by value, on the database now or at a snapshot taken some
//! operations earlier. A worker reads its own keys and checks them exactly
//! (no other thread writes them); it reads other threads' keys only to
//! check that what it finds is a well-formed value of that key.

use std::ops::Bound;

use siftdb::Snapshot;

use super::compare::{self, Bounds, View};
use super::counts::Kind;
use super::model::{Divergence, INDEX_DIGITS, Space, State};
use super::worker::Worker;

/// Longest bounded range, in keys.
const MAX_RANGE: u64 = 100;

/// Operations a snapshot is held for before it is read: up to a few
/// hundred, so that flushes and compactions happen under it.
const MAX_HOLD: u64 = 300;

/// Point reads made at a held snapshot.
const SNAPSHOT_GETS: usize = 8;

/// A snapshot and the expected states of the worker's keys when it was
/// taken.
pub struct Held {
    snapshot: Snapshot,
    states: Vec<State>,
    /// Operations left before it is read.
    left: u64,
}

impl Held {
    /// Whether it is time to read it.
    pub fn due(&self) -> bool {
        self.left == 0
    }

    /// Counts one operation made while it is held.
    pub fn tick(&mut self) {
        self.left = self.left.saturating_sub(1);
    }
}

/// A bounded range: key indexes `from..to`, written with inclusive or
/// exclusive bounds, read forwards or backwards.
struct RangeSpec {
    bounds: Bounds,
    indexes: std::ops::Range<u32>,
    reverse: bool,
}

impl RangeSpec {
    fn draw(worker: &mut Worker<'_>) -> Self {
        let keys = u64::from(worker.space.keys);
        let from = worker.rng.below(keys) as u32;
        let to = (u64::from(from) + 1 + worker.rng.below(MAX_RANGE)).min(keys) as u32;
        let space = worker.space;
        let lower = if from > 0 && worker.rng.below(2) == 0 {
            Bound::Excluded(space.key(from - 1))
        } else {
            Bound::Included(space.key(from))
        };
        let upper = if worker.rng.below(2) == 0 {
            Bound::Included(space.key(to - 1))
        } else {
            Bound::Excluded(space.key(to))
        };
        Self {
            bounds: (lower, upper),
            indexes: from..to,
            reverse: worker.rng.below(2) == 0,
        }
    }

    /// Scans `view` and compares the entries with `states`.
    fn check(
        self,
        view: View<'_>,
        space: &Space,
        states: &[State],
    ) -> siftdb::Result<Option<Divergence>> {
        let what = format!(
            "range {}{}{}",
            describe(&self.bounds),
            if self.reverse { " reversed" } else { "" },
            view.label()
        );
        let found = compare::collect(view.range(self.bounds), self.reverse)?;
        let expected = present_in(states, self.indexes, self.reverse);
        Ok(compare::compare_listing(
            &what, space, states, &expected, &found,
        ))
    }
}

/// A prefix scan: the keys whose index starts with the first `digits`
/// digits of a drawn key's index.
struct PrefixSpec {
    prefix: Vec<u8>,
    indexes: std::ops::Range<u32>,
    reverse: bool,
}

impl PrefixSpec {
    fn draw(worker: &mut Worker<'_>) -> Self {
        let digits = 2 + worker.rng.below(3) as u32;
        let index = worker.pick();
        let step = 10u32.pow(INDEX_DIGITS as u32 - digits);
        let from = index / step * step;
        let mut prefix = worker.space.key(index);
        prefix.truncate(prefix.len() - (INDEX_DIGITS - digits as usize));
        Self {
            prefix,
            indexes: from..(from + step).min(worker.space.keys),
            reverse: worker.rng.below(2) == 0,
        }
    }

    fn check(
        self,
        view: View<'_>,
        space: &Space,
        states: &[State],
    ) -> siftdb::Result<Option<Divergence>> {
        let what = format!(
            "prefix {:?}{}{}",
            String::from_utf8_lossy(&self.prefix),
            if self.reverse { " reversed" } else { "" },
            view.label()
        );
        let found = compare::collect(view.prefix(&self.prefix), self.reverse)?;
        let expected = present_in(states, self.indexes, self.reverse);
        Ok(compare::compare_listing(
            &what, space, states, &expected, &found,
        ))
    }
}

/// Bounds as in mathematics: `[a, b)`, `(a, b]`...
fn describe(bounds: &Bounds) -> String {
    let text = |key: &[u8]| String::from_utf8_lossy(key).into_owned();
    let lower = match &bounds.0 {
        Bound::Included(key) => format!("[{}", text(key)),
        Bound::Excluded(key) => format!("({}", text(key)),
        Bound::Unbounded => "(-inf".to_owned(),
    };
    let upper = match &bounds.1 {
        Bound::Included(key) => format!("{}]", text(key)),
        Bound::Excluded(key) => format!("{})", text(key)),
        Bound::Unbounded => "+inf)".to_owned(),
    };
    format!("{lower}, {upper}")
}

/// The indexes within `indexes` whose state is a value, in scan order.
fn present_in(states: &[State], indexes: std::ops::Range<u32>, reverse: bool) -> Vec<u32> {
    let mut present: Vec<u32> = indexes.filter(|&i| states[i as usize].present()).collect();
    if reverse {
        present.reverse();
    }
    present
}

impl Worker<'_> {
    /// Records a divergence if there is one.
    fn note(&mut self, divergence: Option<Divergence>) {
        if let Some(divergence) = divergence {
            self.diverge(divergence);
        }
    }

    /// Reads one own key.
    pub fn get(&mut self) -> anyhow::Result<()> {
        let index = self.pick();
        let found =
            compare::check_get("get", View::Now(self.db), &self.space, &self.states, index)?;
        self.note(found);
        self.counts.bump(Kind::Get);
        Ok(())
    }

    /// Reads a key of another thread: absent, or a well-formed value of
    /// that key.
    pub fn foreign_get(&mut self) -> anyhow::Result<()> {
        if self.threads < 2 {
            return self.get();
        }
        let (space, index) = self.foreign_key();
        let key = space.key(index);
        if let Some(value) = self.db.get(&key)?
            && let Err(why) = space.decode(index, &value)
        {
            self.diverge(Divergence::new(
                "get of another thread's key",
                &key,
                "absent or a value of this key",
                why,
            ));
        }
        self.counts.bump(Kind::ForeignGet);
        Ok(())
    }

    /// Scans a bounded range of own keys.
    pub fn range(&mut self) -> anyhow::Result<()> {
        let spec = RangeSpec::draw(self);
        let found = spec.check(View::Now(self.db), &self.space, &self.states)?;
        self.note(found);
        self.counts.bump(Kind::Range);
        Ok(())
    }

    /// Scans the own keys under a prefix.
    pub fn prefix(&mut self) -> anyhow::Result<()> {
        let spec = PrefixSpec::draw(self);
        let found = spec.check(View::Now(self.db), &self.space, &self.states)?;
        self.note(found);
        self.counts.bump(Kind::Prefix);
        Ok(())
    }

    /// Searches the value index for one of the worker's tags.
    pub fn find(&mut self) -> anyhow::Result<()> {
        let tag = self.rng.below(super::model::TAGS);
        let found = compare::check_find(View::Now(self.db), &self.space, &self.states, tag)?;
        self.note(found);
        self.counts.bump(Kind::Find);
        Ok(())
    }

    /// Takes a snapshot to read later (or reads the one held now).
    pub fn take_snapshot(&mut self) -> anyhow::Result<()> {
        if self.held.is_some() {
            return self.check_held();
        }
        self.held = Some(Held {
            snapshot: self.db.snapshot(),
            states: self.states.clone(),
            left: 1 + self.rng.below(MAX_HOLD),
        });
        Ok(())
    }

    /// Reads the held snapshot: point reads, a range, a prefix and a
    /// search, all compared with the states as of the snapshot.
    pub fn check_held(&mut self) -> anyhow::Result<()> {
        let Some(held) = self.held.take() else {
            return Ok(());
        };
        let view = View::At(&held.snapshot);
        let mut found = Vec::new();
        for _ in 0..SNAPSHOT_GETS {
            let index = self.pick();
            found.push(compare::check_get(
                "get",
                view,
                &self.space,
                &held.states,
                index,
            )?);
        }
        let range = RangeSpec::draw(self);
        found.push(range.check(view, &self.space, &held.states)?);
        let prefix = PrefixSpec::draw(self);
        found.push(prefix.check(view, &self.space, &held.states)?);
        let tag = self.rng.below(super::model::TAGS);
        found.push(compare::check_find(view, &self.space, &held.states, tag)?);
        if let Some(first) = found.into_iter().flatten().next() {
            self.diverge(first);
        }
        self.counts.bump(Kind::Snapshot);
        Ok(())
    }
}
