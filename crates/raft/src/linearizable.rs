//! A linearizability checker for histories of one register (one key): the
//! Wing–Gong search, with the memo of (operations taken, register value)
//! that Lowe added, so states reached twice are explored once.
//!
//! The fault tests record, per key, what each client asked and what it was
//! answered, with the times it asked and heard; the checker looks for an
//! order of the operations that a single register could have produced,
//! and in which each operation takes effect between its call and its
//! answer. An operation whose outcome is unknown (a timeout: it may or may
//! not have taken effect) may take effect at any time after its call, or
//! never.

use std::collections::HashSet;
use std::hash::Hash;

/// What a client asked of the register.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call<V> {
    /// Read the value.
    Read,
    /// Set the value (`None`: delete it).
    Write(Option<V>),
    /// Set the value to `new` if it is `expected`.
    CompareAndSet {
        /// The value the write depends on.
        expected: Option<V>,
        /// The value written if it holds.
        new: Option<V>,
    },
}

/// What the client was answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer<V> {
    /// A read's value.
    Value(Option<V>),
    /// A write, or a compare-and-set that applied.
    Done,
    /// A compare-and-set that did not apply: the value was not `expected`.
    Conflict,
    /// No answer (a timeout, a lost connection): it may or may not have
    /// taken effect.
    Unknown,
}

/// One operation of a history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation<V> {
    /// What was asked.
    pub call: Call<V>,
    /// What was answered.
    pub answer: Answer<V>,
    /// When it was asked (any clock shared by all clients).
    pub called: u64,
    /// When the answer came (ignored for [`Answer::Unknown`]).
    pub answered: u64,
}

/// A history no order explains.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The most operations any order explained before it got stuck.
    pub explained: usize,
    /// Operations with a known answer, in the history.
    pub known: usize,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "not linearizable: no order explains more than {} of its {} answered operations",
            self.explained, self.known
        )
    }
}

impl std::error::Error for Violation {}

/// Checks that `history`, the operations on one register that held
/// `initial` before any of them, is linearizable.
///
/// # Errors
/// A [`Violation`] if no order of the operations explains every answer.
pub fn check<V: Clone + Eq + Hash>(
    initial: Option<V>,
    history: &[Operation<V>],
) -> Result<(), Violation> {
    // A read with no answer tells nothing, and changes nothing.
    let ops: Vec<&Operation<V>> = history
        .iter()
        .filter(|op| !(op.call == Call::Read && op.answer == Answer::Unknown))
        .collect();
    let deadline = |op: &Operation<V>| match op.answer {
        Answer::Unknown => u64::MAX,
        _ => op.answered,
    };
    let known = ops.iter().filter(|op| op.answer != Answer::Unknown).count();
    let mut explained = 0;
    let start = (Taken::new(ops.len()), initial);
    let mut seen = HashSet::from([start.clone()]);
    let mut stack = vec![start];
    while let Some((taken, value)) = stack.pop() {
        let answered_taken = (0..ops.len())
            .filter(|&i| taken.has(i) && ops[i].answer != Answer::Unknown)
            .count();
        explained = explained.max(answered_taken);
        if answered_taken == known {
            return Ok(());
        }
        // The next to take effect must have been called before every
        // operation not taken yet was answered.
        let horizon = (0..ops.len())
            .filter(|&i| !taken.has(i))
            .map(|i| deadline(ops[i]))
            .min()
            .unwrap_or(u64::MAX);
        for i in (0..ops.len()).filter(|&i| !taken.has(i) && ops[i].called < horizon) {
            if let Some(next) = apply(ops[i], &value) {
                let state = (taken.with(i), next);
                if seen.insert(state.clone()) {
                    stack.push(state);
                }
            }
        }
    }
    Err(Violation { explained, known })
}

/// The register's value after `op` takes effect on `value`, if its answer
/// allows it to.
fn apply<V: Clone + Eq>(op: &Operation<V>, value: &Option<V>) -> Option<Option<V>> {
    match (&op.call, &op.answer) {
        (Call::Read, Answer::Value(read)) => (read == value).then(|| value.clone()),
        (Call::Write(new), Answer::Done | Answer::Unknown) => Some(new.clone()),
        (Call::CompareAndSet { expected, new }, Answer::Done | Answer::Unknown) => {
            (expected == value).then(|| new.clone())
        }
        (Call::CompareAndSet { expected, .. }, Answer::Conflict) => {
            (expected != value).then(|| value.clone())
        }
        _ => None,
    }
}

/// The set of operations taken, as bits.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Taken(Vec<u64>);

impl Taken {
    fn new(len: usize) -> Self {
        Self(vec![0; len.div_ceil(64)])
    }

    fn has(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }

    fn with(&self, i: usize) -> Self {
        let mut taken = self.clone();
        taken.0[i / 64] |= 1 << (i % 64);
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(call: Call<u8>, answer: Answer<u8>, called: u64, answered: u64) -> Operation<u8> {
        Operation {
            call,
            answer,
            called,
            answered,
        }
    }

    fn write(v: u8, called: u64, answered: u64) -> Operation<u8> {
        op(Call::Write(Some(v)), Answer::Done, called, answered)
    }

    fn read(v: Option<u8>, called: u64, answered: u64) -> Operation<u8> {
        op(Call::Read, Answer::Value(v), called, answered)
    }

    fn cas(expected: u8, new: u8, answer: Answer<u8>, at: (u64, u64)) -> Operation<u8> {
        let call = Call::CompareAndSet {
            expected: Some(expected),
            new: Some(new),
        };
        op(call, answer, at.0, at.1)
    }

    #[test]
    fn a_sequential_history_of_a_register_is_linearizable() {
        let history = [
            read(None, 0, 1),
            write(1, 2, 3),
            read(Some(1), 4, 5),
            cas(1, 2, Answer::Done, (6, 7)),
            cas(1, 3, Answer::Conflict, (8, 9)),
            op(Call::Write(None), Answer::Done, 10, 11),
            read(None, 12, 13),
        ];
        assert_eq!(check(None, &history), Ok(()));
    }

    #[test]
    fn a_read_after_a_write_was_answered_must_see_it() {
        let stale = [write(1, 0, 1), read(None, 2, 3)];
        assert!(check(None, &stale).is_err());
        // Overlapping the write, either value is right.
        for seen in [None, Some(1)] {
            assert_eq!(check(None, &[write(1, 0, 10), read(seen, 2, 3)]), Ok(()));
        }
    }

    #[test]
    fn a_value_never_written_cannot_be_read() {
        assert!(check(None, &[write(1, 0, 1), read(Some(2), 2, 3)]).is_err());
    }

    #[test]
    fn reads_cannot_see_values_go_back_and_forth() {
        // Two concurrent writes; one reader sees 1 then 2, another 2 then 1.
        let history = [
            write(1, 0, 10),
            write(2, 0, 10),
            read(Some(1), 1, 2),
            read(Some(2), 3, 4),
            read(Some(2), 1, 2),
            read(Some(1), 3, 4),
        ];
        let violation = check(None, &history).unwrap_err();
        assert_eq!(violation.known, 6);
        assert!(violation.to_string().contains("not linearizable"));
    }

    #[test]
    fn a_retried_compare_and_set_told_conflict_but_applied_is_caught() {
        // The history the retries without sessions produced: the first
        // attempt applied, the retry met its own write and answered
        // "conflict", and a later read saw the value written.
        let history = [
            write(1, 0, 1),
            cas(1, 2, Answer::Conflict, (2, 9)),
            read(Some(2), 10, 11),
        ];
        assert!(check(None, &history).is_err());
    }

    #[test]
    fn an_unknown_write_may_take_effect_late_or_never() {
        let unknown = op(Call::Write(Some(7)), Answer::Unknown, 0, 0);
        // Never seen.
        assert_eq!(check(None, &[unknown.clone(), read(None, 5, 6)]), Ok(()));
        // Seen long after the call, after a read that did not see it.
        let late = [unknown.clone(), read(None, 5, 6), read(Some(7), 100, 101)];
        assert_eq!(check(None, &late), Ok(()));
        // But not before it was called.
        let early = [
            read(Some(7), 0, 1),
            op(Call::Write(Some(7)), Answer::Unknown, 2, 0),
        ];
        assert!(check(None, &early).is_err());
        // And once seen, and overwritten, it cannot come back.
        let back = [
            unknown,
            read(Some(7), 5, 6),
            write(1, 7, 8),
            read(Some(7), 9, 10),
        ];
        assert!(check(None, &back).is_err());
    }

    #[test]
    fn many_concurrent_operations_check_quickly() {
        // 200 writes of distinct values, 20 at a time, each read back.
        let mut history = Vec::new();
        for i in 0..200u64 {
            let at = (i / 20) * 100;
            history.push(write((i % 250) as u8, at, at + 50));
            history.push(read(Some((i % 250) as u8), at + 1, at + 50));
        }
        assert_eq!(check(None, &history), Ok(()));
    }
}
