//! [`replay`]: what a manifest's edits add up to. Pure, so that opening a
//! database and `verify` read a manifest the same way.

use std::collections::BTreeMap;

use super::{TableMeta, VersionEdit, filenames};
use crate::key::{SeqNo, user_key_of};
use crate::value_def::IndexRecord;

/// The state a manifest records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Replayed {
    /// Live tables by file number.
    pub tables: BTreeMap<u64, TableMeta>,
    /// Live value indexes, in the order they were defined.
    pub indexes: Vec<IndexRecord>,
    /// The next unused file number: past every number an edit recorded or
    /// a live table uses.
    pub next_file_number: u64,
    /// Oldest WAL recovery replays (0: none).
    pub log_number: u64,
    /// Newest sequence number the manifest's tables and edits account for.
    pub last_seq: SeqNo,
    /// The compaction style fixed at creation, if recorded.
    pub compaction_style: Option<u8>,
}

/// Applies `edits` in order, from an empty database.
#[cfg(test)]
pub(crate) fn replay(edits: impl IntoIterator<Item = VersionEdit>) -> Replayed {
    let mut state = Replayed::empty();
    for edit in edits {
        state.apply(edit);
    }
    state.finish()
}

impl Replayed {
    /// An empty database's state, before any edit.
    pub(crate) fn empty() -> Self {
        Self {
            tables: BTreeMap::new(),
            indexes: Vec::new(),
            next_file_number: 1,
            log_number: 0,
            last_seq: 0,
            compaction_style: None,
        }
    }

    /// Applies the next edit (its tables move into the state).
    pub(crate) fn apply(&mut self, edit: VersionEdit) {
        edit.apply_indexes(&mut self.indexes);
        for (_, id) in &edit.removed {
            self.tables.remove(id);
        }
        let max = |now: u64, recorded: Option<u64>| recorded.map_or(now, |r| r.max(now));
        self.next_file_number = max(self.next_file_number, edit.next_file_number);
        self.log_number = max(self.log_number, edit.log_number);
        self.last_seq = max(self.last_seq, edit.last_seq);
        if edit.compaction_style.is_some() {
            self.compaction_style = edit.compaction_style;
        }
        for meta in edit.added {
            self.tables.insert(meta.id, meta);
        }
    }

    /// The state once every edit is applied: the numbers also cover every
    /// live table.
    pub(crate) fn finish(mut self) -> Self {
        for meta in self.tables.values() {
            self.next_file_number = self.next_file_number.max(meta.id + 1);
            self.last_seq = self.last_seq.max(meta.max_seq);
        }
        self
    }

    /// Pairs of tables of one sorted run whose key ranges overlap, each as
    /// a sentence. A read looks for a key in one table of each run, so the
    /// other's copy would be lost: a manifest that says this is damaged.
    pub(crate) fn overlapping_runs(&self) -> Vec<String> {
        let mut runs: BTreeMap<(u32, u64), Vec<&TableMeta>> = BTreeMap::new();
        for meta in self.tables.values() {
            runs.entry((meta.level, meta.run)).or_default().push(meta);
        }
        let mut found = Vec::new();
        for ((level, run), mut tables) in runs {
            tables.sort_by(|a, b| user_key_of(&a.smallest).cmp(user_key_of(&b.smallest)));
            for pair in tables.windows(2) {
                let [a, b] = pair else { continue };
                if user_key_of(&a.largest) >= user_key_of(&b.smallest) {
                    found.push(format!(
                        "tables {} and {} of level {level}, run {run} overlap in key range",
                        filenames::table(a.id),
                        filenames::table(b.id)
                    ));
                }
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(id: u64, run: u64, keys: (&str, &str)) -> TableMeta {
        let key = |k: &str| {
            let mut out = Vec::new();
            crate::key::encode_internal_key(
                &mut out,
                k.as_bytes(),
                id,
                crate::key::ValueKind::Value,
            );
            out
        };
        TableMeta {
            id,
            level: 1,
            run,
            file_size: 100,
            entries: 1,
            smallest: key(keys.0),
            largest: key(keys.1),
            min_seq: id,
            max_seq: id * 10,
        }
    }

    #[test]
    fn edits_add_up() {
        let edits = vec![
            VersionEdit {
                added: vec![table(3, 3, ("a", "c")), table(4, 3, ("d", "f"))],
                next_file_number: Some(5),
                log_number: Some(2),
                last_seq: Some(7),
                compaction_style: Some(0),
                ..VersionEdit::default()
            },
            VersionEdit {
                removed: vec![(1, 3)],
                added: vec![table(9, 3, ("a", "b"))],
                log_number: Some(1),
                ..VersionEdit::default()
            },
        ];
        let state = replay(edits);
        assert_eq!(state.tables.keys().copied().collect::<Vec<_>>(), [4, 9]);
        // Numbers never go back, and cover every live table.
        assert_eq!(state.log_number, 2);
        assert_eq!(state.next_file_number, 10);
        assert_eq!(state.last_seq, 90);
        assert_eq!(state.compaction_style, Some(0));
        assert!(state.overlapping_runs().is_empty());
        assert_eq!(replay([]).next_file_number, 1);
    }

    #[test]
    fn overlapping_tables_of_one_run_are_found() {
        let edits = vec![VersionEdit {
            added: vec![
                table(3, 3, ("a", "c")),
                table(4, 3, ("c", "f")),
                table(5, 5, ("a", "z")),
            ],
            ..VersionEdit::default()
        }];
        let found = replay(edits).overlapping_runs();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("000003.sst and 000004.sst"), "{found:?}");
    }
}
