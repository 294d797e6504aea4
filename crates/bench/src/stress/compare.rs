//! Comparing what the database returns with the expected state: point
//! reads, scans and searches by value, through a [`View`] that is either
//! the database now or a snapshot. Used by the workers while they run and
//! by the parent after each reopen.

use std::ops::Bound;

use siftdb::{Db, DbIter, Find, Snapshot};

use super::model::{Divergence, INDEX, Space, State};

/// Where a read is made.
#[derive(Clone, Copy)]
pub enum View<'a> {
    /// The database as of each call.
    Now(&'a Db),
    /// A snapshot.
    At(&'a Snapshot),
}

/// Bounds of a scan.
pub type Bounds = (Bound<Vec<u8>>, Bound<Vec<u8>>);

impl View<'_> {
    /// The value of `key`.
    pub fn get(&self, key: &[u8]) -> siftdb::Result<Option<Vec<u8>>> {
        match self {
            Self::Now(db) => db.get(key),
            Self::At(snapshot) => snapshot.get(key),
        }
    }

    /// Entries within `bounds`.
    pub fn range(&self, bounds: Bounds) -> DbIter {
        match self {
            Self::Now(db) => db.range(bounds),
            Self::At(snapshot) => snapshot.range(bounds),
        }
    }

    /// Entries whose keys start with `prefix`.
    pub fn prefix(&self, prefix: &[u8]) -> DbIter {
        match self {
            Self::Now(db) => db.prefix(prefix),
            Self::At(snapshot) => snapshot.prefix(prefix),
        }
    }

    /// Entries whose value has tag `tag` in the value index.
    pub fn find(&self, tag: &str) -> siftdb::Result<Find> {
        match self {
            Self::Now(db) => db.find(INDEX, tag),
            Self::At(snapshot) => snapshot.find(INDEX, tag),
        }
    }

    /// How it reads in a divergence: `""` or `" at a snapshot"`.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Now(_) => "",
            Self::At(_) => " at a snapshot",
        }
    }
}

/// Reads key `index` and compares it with `states`.
pub fn check_get(
    what: &str,
    view: View<'_>,
    space: &Space,
    states: &[State],
    index: u32,
) -> siftdb::Result<Option<Divergence>> {
    let key = space.key(index);
    let found = view.get(&key)?;
    let expected = states[index as usize];
    Ok(
        (!space.matches(index, expected, found.as_deref())).then(|| {
            Divergence::new(
                format!("{what}{}", view.label()),
                &key,
                expected.to_string(),
                space.describe(index, found.as_deref()),
            )
        }),
    )
}

/// Compares `found` (a scan or a search, in listing order) with the keys
/// `expected` lists (indexes, in the same order), each of which must hold
/// its state in `states`. Reports the first difference.
pub fn compare_listing(
    what: &str,
    space: &Space,
    states: &[State],
    expected: &[u32],
    found: &[(Vec<u8>, Vec<u8>)],
) -> Option<Divergence> {
    let len = expected.len().max(found.len());
    for at in 0..len {
        let wanted = expected.get(at).map(|&i| (i, space.key(i)));
        let got = found.get(at);
        match (wanted, got) {
            (Some((index, key)), Some((found_key, value))) if key == *found_key => {
                let state = states[index as usize];
                if !space.matches(index, state, Some(value)) {
                    return Some(Divergence::new(
                        what,
                        &key,
                        state.to_string(),
                        space.describe(index, Some(value)),
                    ));
                }
            }
            (Some((index, key)), got) => {
                // Either the listing lacks `key` altogether, or it lists
                // something else (or out of order) at this place.
                if got.is_none() || !found.iter().any(|(k, _)| *k == key) {
                    return Some(Divergence::new(
                        what,
                        &key,
                        states[index as usize].to_string(),
                        "absent from the listing",
                    ));
                }
                return got.map(|(k, v)| extra(what, space, k, v));
            }
            (None, Some((found_key, value))) => {
                return Some(extra(what, space, found_key, value));
            }
            (None, None) => {}
        }
    }
    None
}

/// A listed entry that should not be there.
fn extra(what: &str, space: &Space, key: &[u8], value: &[u8]) -> Divergence {
    let found = match space.index_of(key) {
        Some(index) => format!("{} listed", space.describe(index, Some(value))),
        None => format!(
            "a key outside the scan listed, value {:?}",
            String::from_utf8_lossy(value)
        ),
    };
    Divergence::new(what, key, "not listed here (or not in this order)", found)
}

/// Collects a scan, forwards or backwards.
pub fn collect(iter: DbIter, reverse: bool) -> siftdb::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    if reverse {
        iter.rev().collect()
    } else {
        iter.collect()
    }
}

/// Searches the value index for tag `tag` of `space`'s thread and compares
/// the answer with the own keys whose expected value has that tag.
pub fn check_find(
    view: View<'_>,
    space: &Space,
    states: &[State],
    tag: u64,
) -> siftdb::Result<Option<Divergence>> {
    let found: Vec<(Vec<u8>, Vec<u8>)> = view
        .find(&space.tag_name(tag))?
        .collect::<siftdb::Result<_>>()?;
    let expected: Vec<u32> = (0..space.keys)
        .filter(|&i| {
            let state = states[i as usize];
            state.present() && space.tag(i, state.version()) == tag
        })
        .collect();
    let what = format!("find {}{}", space.tag_name(tag), view.label());
    Ok(compare_listing(&what, space, states, &expected, &found))
}

/// Compares a whole-thread scan (`prefix` of the thread) with `states`.
pub fn check_all(
    what: &str,
    view: View<'_>,
    space: &Space,
    states: &[State],
    reverse: bool,
) -> siftdb::Result<Option<Divergence>> {
    let found = collect(view.prefix(&space.prefix()), reverse)?;
    let mut expected: Vec<u32> = (0..space.keys)
        .filter(|&i| states[i as usize].present())
        .collect();
    if reverse {
        expected.reverse();
    }
    Ok(compare_listing(
        &format!("{what}{}", view.label()),
        space,
        states,
        &expected,
        &found,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space() -> Space {
        Space {
            thread: 0,
            keys: 10,
        }
    }

    fn listed(space: &Space, entries: &[(u32, u64)]) -> Vec<(Vec<u8>, Vec<u8>)> {
        entries
            .iter()
            .map(|&(i, v)| (space.key(i), space.value(i, v)))
            .collect()
    }

    #[test]
    fn listings_report_the_first_difference() {
        let space = space();
        let mut states = vec![State::default(); 10];
        states[2] = State::from_word(3 << 1 | 1);
        states[5] = State::from_word(1 << 1 | 1);
        let expected = [2, 5];
        let check = |found: &[(u32, u64)]| {
            compare_listing("scan", &space, &states, &expected, &listed(&space, found))
                .map(|d| (d.key, d.expected, d.found))
        };
        assert!(check(&[(2, 3), (5, 1)]).is_none());
        let stale = check(&[(2, 2), (5, 1)]);
        assert_eq!(stale, Some(("s00:00002".into(), "v3".into(), "v2".into())));
        let missing = check(&[(5, 1)]);
        assert_eq!(missing.map(|d| d.2), Some("absent from the listing".into()));
        let tail = check(&[(2, 3)]);
        assert_eq!(tail.map(|d| d.0), Some("s00:00005".into()));
        let extra = check(&[(2, 3), (4, 1), (5, 1)]);
        assert_eq!(
            extra.map(|d| (d.0, d.1)),
            Some((
                "s00:00004".into(),
                "not listed here (or not in this order)".into()
            ))
        );
    }
}
