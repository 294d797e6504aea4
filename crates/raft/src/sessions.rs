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
//! that is not its opening one answers [`Outcome::SessionExpired`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use siftdb::{Db, WriteBatch};

use crate::codec::{decode, encode};
use crate::command::{Outcome, SESSION_TTL_ENTRIES, Session};
use crate::keys;

/// Sessions are swept at log indexes that are multiples of this.
const SWEEP_EVERY: u64 = 1 << 16;

/// Outcomes kept per session at most: a client that leaves more requests
/// unanswered than this loses the exactly-once answer of the oldest.
const MAX_OUTCOMES: usize = 1024;

/// What the state machine keeps of one session.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
struct Record {
    /// Log index of the last request of the session applied.
    last_index: u64,
    /// The client's first unanswered number, as far as known: the outcomes
    /// of lower numbers are forgotten.
    first_unanswered: u64,
    /// Number -> outcome, for the requests applied at or above it.
    outcomes: BTreeMap<u64, Outcome>,
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
    record: Record,
}

/// Whether the request of `session` must be applied.
pub(crate) fn check(db: &Db, session: Session) -> Result<Verdict, String> {
    let record = match db
        .get(keys::session(session.id))
        .map_err(|e| e.to_string())?
    {
        Some(bytes) => decode::<Record>(&bytes).map_err(|e| e.to_string())?,
        None if session.first_unanswered <= 1 => Record::default(),
        None => return Ok(Verdict::Answer(Outcome::SessionExpired)),
    };
    if let Some(outcome) = record.outcomes.get(&session.seq) {
        return Ok(Verdict::Answer(outcome.clone()));
    }
    if session.seq < record.first_unanswered {
        return Ok(Verdict::Answer(Outcome::AlreadyAnswered));
    }
    Ok(Verdict::Apply(Pending { session, record }))
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
        mut record,
    } = pending;
    record.last_index = index;
    record.first_unanswered = record.first_unanswered.max(session.first_unanswered);
    let floor = record.first_unanswered;
    record.outcomes.retain(|&seq, _| seq >= floor);
    record.outcomes.insert(session.seq, outcome.clone());
    while record.outcomes.len() > MAX_OUTCOMES {
        record.outcomes.pop_first();
    }
    batch.insert(
        keys::session(session.id),
        encode(&record).map_err(|e| e.to_string())?,
    );
    Ok(())
}

/// At a sweep index, deletes (in `batch`) the sessions last used more than
/// [`SESSION_TTL_ENTRIES`] entries before `index`.
pub(crate) fn sweep(db: &Db, index: u64, batch: &mut WriteBatch) -> Result<(), String> {
    if !index.is_multiple_of(SWEEP_EVERY) {
        return Ok(());
    }
    for item in db.prefix(keys::SESSION) {
        let (key, bytes) = item.map_err(|e| e.to_string())?;
        let record = decode::<Record>(&bytes).map_err(|e| e.to_string())?;
        if record.last_index.saturating_add(SESSION_TTL_ENTRIES) < index {
            batch.remove(key);
        }
    }
    Ok(())
}
