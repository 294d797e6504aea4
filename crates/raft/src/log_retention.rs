//! What a node's log keeps behind its snapshot, and the task that purges
//! the rest.
//!
//! openraft 0.9 purges a leader's log up to its newest snapshot (less
//! `max_in_snapshot_log_to_keep`) as soon as it builds it, whatever its
//! followers still need: a snapshot on its way to a follower does not
//! hold the purge back. A follower far behind that takes longer to install
//! a snapshot than the leader takes to build the next one then finds the
//! log after its snapshot purged, and is sent snapshot after snapshot for
//! as long as writes come: `add_learner` never returned.
//!
//! So openraft's own purge is off and [`Retention::run`] purges instead,
//! up to the snapshot less the entries to keep, and on a leader no further
//! than a follower that is catching up still needs: one whose progress
//! moved lately, or any while a snapshot is being sent (a follower
//! installing one makes no progress until it is done). A follower that
//! stays silent is not waited for (it catches up by snapshot when it comes
//! back), and none holds more than [`Retention::hold_limit`] entries, so a
//! follower too slow for the writes costs a bounded log.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use openraft::ServerState;

use crate::snapshot::SnapshotReads;
use crate::types::{NodeId, Raft};

/// How often the task looks at the node's progress.
const TICK: Duration = Duration::from_millis(100);

/// What the log keeps.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Retention {
    /// Entries kept behind the newest snapshot in any case.
    pub(crate) keep: u64,
    /// The most entries, behind that, kept for followers catching up.
    pub(crate) hold_limit: u64,
    /// A follower whose progress has not moved for this long is not
    /// waited for.
    pub(crate) patience: Duration,
}

impl Retention {
    /// The last index the log may be purged up to, if any: `keep` entries
    /// behind `snapshot`, and no further than `needed` (the least matched
    /// index of the followers waited for; `Some(None)`: one has nothing),
    /// unless that keeps more than `hold_limit` more.
    fn purge_upto(&self, snapshot: Option<u64>, needed: Option<Option<u64>>) -> Option<u64> {
        let policy = snapshot?.checked_sub(self.keep)?;
        let floor = policy.checked_sub(self.hold_limit);
        match needed {
            None => Some(policy),
            Some(needed) => needed.map(|matched| matched.min(policy)).max(floor),
        }
    }

    /// Purges `raft`'s log as this says, until the node stops.
    pub(crate) async fn run(self, raft: Raft, sending: SnapshotReads) {
        let mut followers = Followers::default();
        let mut purged = None;
        let mut tick = tokio::time::interval(TICK);
        loop {
            tick.tick().await;
            let upto = {
                let metrics = raft.metrics();
                let metrics = metrics.borrow();
                if metrics.running_state.is_err() {
                    return;
                }
                let needed = match (&metrics.state, &metrics.replication) {
                    (ServerState::Leader, Some(replication)) => {
                        let matched = replication.iter().map(|(id, m)| (*id, m.map(|m| m.index)));
                        followers.observe(matched, Instant::now());
                        followers.needed(self.patience, sending.any())
                    }
                    _ => {
                        followers = Followers::default();
                        None
                    }
                };
                self.purge_upto(metrics.snapshot.map(|id| id.index), needed)
            };
            if upto > purged {
                if let Some(index) = upto
                    && raft.trigger().purge_log(index).await.is_err()
                {
                    return;
                }
                purged = upto;
            }
        }
    }
}

/// What a leader has seen of its followers' progress.
#[derive(Debug, Default)]
struct Followers(BTreeMap<NodeId, Seen>);

#[derive(Clone, Copy, Debug)]
struct Seen {
    matched: Option<u64>,
    /// When `matched` last changed.
    moved: Instant,
}

impl Followers {
    /// Records each follower's matched index at `now`.
    fn observe(&mut self, matched: impl Iterator<Item = (NodeId, Option<u64>)>, now: Instant) {
        let mut seen = BTreeMap::new();
        for (id, matched) in matched {
            let moved = match self.0.get(&id) {
                Some(before) if before.matched == matched => before.moved,
                _ => now,
            };
            seen.insert(id, Seen { matched, moved });
        }
        self.0 = seen;
    }

    /// The least matched index of the followers waited for: those whose
    /// progress moved within `patience`, or every one while `sending` a
    /// snapshot. `None`: none is waited for.
    fn needed(&self, patience: Duration, sending: bool) -> Option<Option<u64>> {
        self.0
            .values()
            .filter(|seen| sending || seen.moved.elapsed() < patience)
            .map(|seen| seen.matched)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RETENTION: Retention = Retention {
        keep: 10,
        hold_limit: 1000,
        patience: Duration::from_secs(10),
    };

    #[test]
    fn the_log_keeps_what_followers_catching_up_need_within_the_limit() {
        let upto = |snapshot, needed| RETENTION.purge_upto(snapshot, needed);
        assert_eq!(upto(None, None), None, "no snapshot: nothing to purge");
        assert_eq!(upto(Some(5), None), None, "fewer entries than kept");
        assert_eq!(upto(Some(500), None), Some(490));
        assert_eq!(upto(Some(500), Some(Some(200))), Some(200));
        assert_eq!(upto(Some(500), Some(Some(495))), Some(490));
        assert_eq!(upto(Some(500), Some(None)), None, "one has nothing");
        assert_eq!(upto(Some(5000), Some(None)), Some(3990), "the limit");
        assert_eq!(upto(Some(5000), Some(Some(100))), Some(3990));
    }

    #[test]
    fn followers_that_stopped_moving_are_not_waited_for_unless_a_snapshot_is_sent() {
        let mut followers = Followers::default();
        let long_ago = Instant::now() - Duration::from_secs(60);
        followers.observe([(2, Some(7)), (3, None)].into_iter(), long_ago);
        let patience = RETENTION.patience;
        assert_eq!(followers.needed(patience, false), None);
        assert_eq!(followers.needed(patience, true), Some(None));
        // Node 2 moves: waited for again; node 3 still silent.
        followers.observe([(2, Some(9)), (3, None)].into_iter(), Instant::now());
        assert_eq!(followers.needed(patience, false), Some(Some(9)));
        // A node that left is forgotten.
        followers.observe([(3, None)].into_iter(), Instant::now());
        assert_eq!(followers.needed(patience, true), Some(None));
        followers.observe(std::iter::empty(), Instant::now());
        assert_eq!(followers.needed(patience, true), None);
    }
}
