//! Exactly-once application of client requests (the Raft dissertation,
//! section 6.3). The state machine keeps, per client session, the outcomes
//! of the requests it applied whose answers the client may not have
//! received, in the same write batch as the requests' writes. A retry
//! finds its outcome there and is not applied again.
//!
//! A session opens with the first request that says nothing was answered
//! yet (`first_unanswered == 1`), and is forgotten once no request of it
//! came for [`SESSION_TTL_ENTRIES`] log entries: every node sweeps at the
//! same log indexes, so all decide alike. A request of an unknown session
//! that is not its opening one answers [`Outcome::SessionExpired`] (the
//! client opens a new session if no attempt of it may have been applied).
//!
//! A session is a small record (`keys::session`), each outcome a record of
//! its own (`keys::outcome`): an outcome holds up to a key at the limit (a
//! transaction's conflict), and a request reads and writes only its own.
//! An index of the sessions by age (`keys::session_age`) lets a sweep read
//! only the expired ones, a bounded number per entry.
//!
//! An outcome is forgotten only once the client says it had the answer:
//! forgetting one still unanswered would let its retry apply again. So a
//! session that holds [`MAX_OUTCOMES`] refuses new requests
//! ([`Outcome::TooManyUnanswered`], nothing written) until the client
//! acknowledges some.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use siftdb::{Db, WriteBatch};

use crate::codec::{decode, encode};
use crate::command::{Outcome, SESSION_TTL_ENTRIES, Session};
use crate::keys;

/// Sessions are swept at log indexes that are multiples of this...
const SWEEP_EVERY: u64 = 64;

/// ...at most this many at a time: more than the sessions opened since the
/// last sweep (one per entry at most), so sweeps keep up.
const SWEEP_MOST: usize = 256;

/// Outcomes a session holds before it refuses new requests.
pub(crate) const MAX_OUTCOMES: u64 = 1024;

/// What the state machine keeps of one session, beside its outcomes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Record {
    /// Log index of the last request of the session applied.
    last_index: u64,
    /// The client's first unanswered number, as far as known: the outcomes
    /// of lower numbers are forgotten.
    first_unanswered: u64,
    /// How many outcomes it holds (of numbers at or above it).
    held: u64,
}

/// What to do with a request of `session`.
pub(crate) enum Verdict {
    /// Apply it, then [`record`] its outcome.
    Apply(Pending),
    /// Do not apply it: it was (or cannot be told), and this is the answer.
    Answer(Outcome),
}

/// A session's record, to be updated with the outcome of the request
/// being applied.
pub(crate) struct Pending {
    session: Session,
    /// `None`: a new session.
    before: Option<Record>,
    record: Record,
    /// Outcomes the client had the answers of.
    forgotten: Vec<Vec<u8>>,
}

/// Whether the request of `session` must be applied.
pub(crate) fn check(db: &Db, session: Session) -> Result<Verdict, String> {
    let before = match db
        .get(keys::session(session.id))
        .map_err(|e| e.to_string())?
    {
        Some(bytes) => Some(decode::<Record>(&bytes).map_err(|e| e.to_string())?),
        None if session.first_unanswered <= 1 => None,
        None => return Ok(Verdict::Answer(Outcome::SessionExpired)),
    };
    let mut record = before.unwrap_or_default();
    if let Some(bytes) = db
        .get(keys::outcome(session.id, session.seq))
        .map_err(|e| e.to_string())?
    {
        return Ok(Verdict::Answer(decode(&bytes).map_err(|e| e.to_string())?));
    }
    if session.seq < record.first_unanswered {
        return Ok(Verdict::Answer(Outcome::AlreadyAnswered));
    }
    let forgotten = forget_answered(db, session, &mut record)?;
    // Room while it holds fewer than the most, and always for its first
    // unanswered request, whose answer the client waits for before it can
    // acknowledge any other (so a full session holds one more at most).
    if record.held >= MAX_OUTCOMES && session.seq != record.first_unanswered {
        return Ok(Verdict::Answer(Outcome::TooManyUnanswered));
    }
    Ok(Verdict::Apply(Pending {
        session,
        before,
        record,
        forgotten,
    }))
}

/// The client had the answers below `session.first_unanswered`: the keys
/// of their outcomes, to delete, and `record` without them.
fn forget_answered(db: &Db, session: Session, record: &mut Record) -> Result<Vec<Vec<u8>>, String> {
    if session.first_unanswered <= record.first_unanswered {
        return Ok(Vec::new());
    }
    let range = keys::outcome(session.id, record.first_unanswered)
        ..keys::outcome(session.id, session.first_unanswered);
    let mut forgotten = Vec::new();
    for item in db.range(range) {
        forgotten.push(item.map_err(|e| e.to_string())?.0);
    }
    record.first_unanswered = session.first_unanswered;
    record.held = record.held.saturating_sub(forgotten.len() as u64);
    Ok(forgotten)
}

/// Records, in `batch`, `outcome` as the answer of the pending request,
/// applied at log index `index`.
pub(crate) fn record(
    pending: Pending,
    outcome: &Outcome,
    index: u64,
    batch: &mut WriteBatch,
) -> Result<(), String> {
    let Pending {
        session,
        before,
        mut record,
        forgotten,
    } = pending;
    for key in forgotten {
        batch.remove(key);
    }
    if let Some(before) = before {
        batch.remove(keys::session_age(before.last_index, session.id));
    }
    record.last_index = index;
    record.held += 1;
    let outcome = encode(outcome).map_err(|e| e.to_string())?;
    batch.insert(keys::outcome(session.id, session.seq), outcome);
    let record = encode(&record).map_err(|e| e.to_string())?;
    batch.insert(keys::session(session.id), record);
    batch.insert(keys::session_age(index, session.id), Vec::new());
    Ok(())
}

/// At a sweep index, deletes (in `batch`) up to [`SWEEP_MOST`] of the
/// sessions last used more than [`SESSION_TTL_ENTRIES`] entries before
/// `index`, oldest first, other than `applying` (the session of the
/// request this entry applies, which it has just used).
pub(crate) fn sweep(
    db: &Db,
    index: u64,
    applying: Option<u64>,
    batch: &mut WriteBatch,
) -> Result<(), String> {
    if !index.is_multiple_of(SWEEP_EVERY) {
        return Ok(());
    }
    let Some(expired) = index.checked_sub(SESSION_TTL_ENTRIES) else {
        return Ok(());
    };
    let ages = keys::SESSION_AGE.to_vec()..keys::session_age(expired, 0);
    let mut swept = 0;
    for item in db.range(ages) {
        let (age, _) = item.map_err(|e| e.to_string())?;
        let (_, id) = keys::session_age_of(&age).ok_or("a damaged session age key")?;
        if Some(id) == applying {
            continue;
        }
        batch.remove(age);
        batch.remove(keys::session(id));
        for outcome in db.prefix(keys::outcome_prefix(id)) {
            batch.remove(outcome.map_err(|e| e.to_string())?.0);
        }
        swept += 1;
        if swept == SWEEP_MOST {
            break;
        }
    }
    Ok(())
}

/// The layout before [`keys::SESSIONS_SPLIT`]: one record per session,
/// with its outcomes.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct Unsplit {
    last_index: u64,
    first_unanswered: u64,
    outcomes: BTreeMap<u64, Outcome>,
}

/// Moves the sessions of a database written before
/// [`keys::SESSIONS_SPLIT`] into the present layout, once: a change of
/// layout only, the same on every node.
pub(crate) fn split(db: &Db) -> siftdb::Result<()> {
    if db.get(keys::SESSIONS_SPLIT)?.is_some() {
        return Ok(());
    }
    // In batches of a bounded size: a crash between two leaves sessions
    // of either layout, and the next open moves the rest.
    const BATCH_BYTES: usize = 16 << 20;
    let mut batch = WriteBatch::new();
    for item in db.prefix(keys::SESSION) {
        let (key, bytes) = item?;
        let (Some(id), Ok(old)) = (keys::session_of(&key), decode::<Unsplit>(&bytes)) else {
            continue;
        };
        let record = Record {
            last_index: old.last_index,
            first_unanswered: old.first_unanswered,
            held: old.outcomes.len() as u64,
        };
        for (seq, outcome) in &old.outcomes {
            batch.insert(keys::outcome(id, *seq), encode(outcome).map_err(invalid)?);
        }
        batch.insert(key, encode(&record).map_err(invalid)?);
        batch.insert(keys::session_age(old.last_index, id), Vec::new());
        if batch.size_in_bytes() > BATCH_BYTES {
            db.write(&std::mem::take(&mut batch))?;
        }
    }
    batch.insert(keys::SESSIONS_SPLIT, Vec::new());
    db.write(&batch)
}

fn invalid(e: rmp_serde::encode::Error) -> siftdb::Error {
    siftdb::Error::InvalidArgument(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open() -> (tempfile::TempDir, Db) {
        let dir = tempfile::TempDir::new().unwrap();
        let db = Db::open(dir.path()).unwrap();
        (dir, db)
    }

    fn session(id: u64, seq: u64, first_unanswered: u64) -> Session {
        Session {
            id,
            seq,
            first_unanswered,
        }
    }

    /// Applies request `seq` of session `id` at `index`, as the state
    /// machine does; `None` if it was not to be applied.
    fn apply(db: &Db, id: u64, seq: u64, index: u64) -> Option<Outcome> {
        let pending = match check(db, session(id, seq, 1)).unwrap() {
            Verdict::Apply(pending) => pending,
            Verdict::Answer(outcome) => return Some(outcome),
        };
        let mut batch = WriteBatch::new();
        record(pending, &Outcome::Applied, index, &mut batch).unwrap();
        sweep(db, index, Some(id), &mut batch).unwrap();
        db.write(&batch).unwrap();
        None
    }

    fn sweep_at(db: &Db, index: u64) {
        let mut batch = WriteBatch::new();
        sweep(db, index, None, &mut batch).unwrap();
        db.write(&batch).unwrap();
    }

    fn known(db: &Db, id: u64) -> bool {
        db.get(keys::session(id)).unwrap().is_some()
    }

    #[test]
    fn a_sweep_deletes_a_bounded_number_of_expired_sessions_oldest_first() {
        let (_dir, db) = open();
        let opened = SWEEP_MOST as u64 + 44;
        for id in 1..=opened {
            assert_eq!(apply(&db, id, 1, id), None);
        }
        // Session 1 is used again late: it is not expired.
        assert_eq!(apply(&db, 1, 2, 1000), None);
        let index = (SESSION_TTL_ENTRIES + opened + 1).next_multiple_of(SWEEP_EVERY);
        sweep_at(&db, index);
        assert!(known(&db, 1));
        let left: Vec<u64> = (2..=opened).filter(|id| known(&db, *id)).collect();
        assert_eq!(left, (SWEEP_MOST as u64 + 2..=opened).collect::<Vec<_>>());
        assert_eq!(db.prefix(keys::outcome_prefix(2)).count(), 0);
        sweep_at(&db, index + SWEEP_EVERY);
        assert!((2..=opened).all(|id| !known(&db, id)));
        assert!(known(&db, 1));
        let ages: Vec<_> = db.prefix(keys::SESSION_AGE).map(|i| i.unwrap().0).collect();
        assert_eq!(ages, [keys::session_age(1000, 1)], "one age per session");
    }

    #[test]
    fn a_database_of_the_old_layout_is_split_once() {
        let (_dir, db) = open();
        let old = Unsplit {
            last_index: 10,
            first_unanswered: 3,
            outcomes: BTreeMap::from([
                (3, Outcome::Applied),
                (4, Outcome::Conflict { key: b"k".to_vec() }),
            ]),
        };
        db.insert(keys::session(5), encode(&old).unwrap()).unwrap();
        split(&db).unwrap();
        split(&db).unwrap();
        let answer = |seq| match check(&db, session(5, seq, 3)).unwrap() {
            Verdict::Answer(outcome) => Some(outcome),
            Verdict::Apply(_) => None,
        };
        assert_eq!(answer(4), Some(Outcome::Conflict { key: b"k".to_vec() }));
        assert_eq!(answer(2), Some(Outcome::AlreadyAnswered));
        assert_eq!(answer(5), None);
        // It has an age, so a sweep finds it.
        sweep_at(
            &db,
            (SESSION_TTL_ENTRIES + 11).next_multiple_of(SWEEP_EVERY),
        );
        assert!(!known(&db, 5));
        assert_eq!(db.prefix(keys::OUTCOME).count(), 0);
    }

    #[test]
    fn acknowledged_outcomes_are_deleted_and_make_room() {
        let (_dir, db) = open();
        for seq in 1..=MAX_OUTCOMES {
            assert_eq!(apply(&db, 9, seq, seq), None);
        }
        let full = check(&db, session(9, MAX_OUTCOMES + 1, 1)).unwrap();
        assert!(matches!(full, Verdict::Answer(Outcome::TooManyUnanswered)));
        let Verdict::Apply(pending) = check(&db, session(9, MAX_OUTCOMES + 1, 1000)).unwrap()
        else {
            panic!("no room after acknowledging 999");
        };
        let mut batch = WriteBatch::new();
        record(pending, &Outcome::Applied, 5000, &mut batch).unwrap();
        db.write(&batch).unwrap();
        assert_eq!(db.prefix(keys::outcome_prefix(9)).count(), 26);
        let record: Record = decode(&db.get(keys::session(9)).unwrap().unwrap()).unwrap();
        assert_eq!((record.first_unanswered, record.held), (1000, 26));
    }
}
