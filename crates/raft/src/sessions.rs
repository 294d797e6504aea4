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

/// Sessions are swept at log indexes that are multiples of this.
const SWEEP_EVERY: u64 = 1 << 16;

/// Outcomes a session holds before it refuses new requests: bounds its
/// record, which is read and written whole with each of its requests.
pub(crate) const MAX_OUTCOMES: usize = 1024;

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
    let mut record = match db
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
    record.forget_answered(session.first_unanswered);
    if !record.has_room_for(session.seq) {
        return Ok(Verdict::Answer(Outcome::TooManyUnanswered));
    }
    Ok(Verdict::Apply(Pending { session, record }))
}

impl Record {
    /// The client had the answers below `first_unanswered`: their outcomes
    /// go.
    fn forget_answered(&mut self, first_unanswered: u64) {
        self.first_unanswered = self.first_unanswered.max(first_unanswered);
        let floor = self.first_unanswered;
        self.outcomes.retain(|&seq, _| seq >= floor);
    }

    /// Whether request `seq`, not applied yet, may be: while the session
    /// holds fewer than [`MAX_OUTCOMES`], and always for its first
    /// unanswered request, whose answer the client waits for before it can
    /// acknowledge any other (so a full session holds one more at most).
    fn has_room_for(&self, seq: u64) -> bool {
        self.outcomes.len() < MAX_OUTCOMES || seq == self.first_unanswered
    }
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
    record.outcomes.insert(session.seq, outcome.clone());
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
