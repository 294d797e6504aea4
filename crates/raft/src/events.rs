//! What a node tells its operator as its cluster changes: elections, who
//! leads, and the membership, one line each ([`Node::changes`], printed by
//! `sift serve`).
//!
//! [`Node::changes`]: crate::Node::changes

use std::collections::BTreeSet;

use openraft::metrics::RaftServerMetrics;
use openraft::{BasicNode, ServerState};
use tokio::sync::watch;

use crate::types::NodeId;

type Metrics = RaftServerMetrics<NodeId, BasicNode>;

/// The changes of one node, as lines of text.
#[derive(Debug)]
pub struct Changes {
    metrics: watch::Receiver<Metrics>,
    seen: Metrics,
    pending: std::collections::VecDeque<String>,
}

impl Changes {
    pub(crate) fn new(metrics: watch::Receiver<Metrics>) -> Self {
        Self {
            metrics,
            // Nothing seen yet: the first line tells the membership a node
            // restarts with.
            seen: Metrics::default(),
            pending: std::collections::VecDeque::new(),
        }
    }

    /// The next change, once it happens; `None` once Raft has stopped.
    pub async fn next(&mut self) -> Option<String> {
        loop {
            if let Some(line) = self.pending.pop_front() {
                return Some(line);
            }
            let now = self.metrics.borrow_and_update().clone();
            self.pending.extend(describe(&self.seen, &now));
            self.seen = now;
            if self.pending.is_empty() && self.metrics.changed().await.is_err() {
                return None;
            }
        }
    }
}

/// What changed from `before` to `now`, one line each.
fn describe(before: &Metrics, now: &Metrics) -> Vec<String> {
    let mut lines = Vec::new();
    let term = now.vote.leader_id.term;
    let new_term = term != before.vote.leader_id.term;
    match (now.state, now.current_leader) {
        (ServerState::Leader, _) if before.state != ServerState::Leader => {
            lines.push(format!("node {} became the leader in term {term}", now.id));
        }
        (ServerState::Candidate, _) if before.state != ServerState::Candidate || new_term => {
            lines.push(format!(
                "node {} started an election for term {term}",
                now.id
            ));
        }
        (ServerState::Leader | ServerState::Candidate, _) => {}
        (_, Some(leader)) if leader != now.id && now.current_leader != before.current_leader => {
            lines.push(format!("node {leader} is the leader in term {term}"));
        }
        (_, None) if before.current_leader.is_some() => {
            lines.push(format!("no leader (term {term})"));
        }
        _ => {}
    }
    if now.membership_config.log_id() != before.membership_config.log_id() {
        let voters: BTreeSet<NodeId> = now.membership_config.voter_ids().collect();
        let membership = now.membership_config.membership();
        let learners: BTreeSet<NodeId> = membership.learner_ids().collect();
        if !voters.is_empty() || !learners.is_empty() {
            lines.push(format!(
                "membership: voters {voters:?}, learners {learners:?}"
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use openraft::{CommittedLeaderId, LogId, Membership, StoredMembership, Vote};

    use super::*;

    fn metrics(state: ServerState, term: u64, leader: Option<NodeId>) -> Metrics {
        Metrics {
            id: 1,
            vote: Vote::new(term, leader.unwrap_or(1)),
            state,
            current_leader: leader,
            membership_config: Arc::default(),
        }
    }

    #[test]
    fn elections_leaders_and_memberships_each_make_one_line() {
        use ServerState::{Candidate, Follower, Leader};
        let start = Metrics::default();
        let candidate = metrics(Candidate, 1, None);
        assert_eq!(
            describe(&start, &candidate),
            ["node 1 started an election for term 1"]
        );
        let again = metrics(Candidate, 2, None);
        assert_eq!(
            describe(&candidate, &again),
            ["node 1 started an election for term 2"]
        );
        let leader = metrics(Leader, 2, Some(1));
        assert_eq!(
            describe(&again, &leader),
            ["node 1 became the leader in term 2"]
        );
        assert!(describe(&leader, &leader).is_empty());
        let follower = metrics(Follower, 3, Some(2));
        assert_eq!(
            describe(&leader, &follower),
            ["node 2 is the leader in term 3"]
        );
        let lost = metrics(Follower, 3, None);
        assert_eq!(describe(&follower, &lost), ["no leader (term 3)"]);

        let mut joined = lost.clone();
        let nodes = (1..=3).map(|id| (id, BasicNode::default()));
        let members = Membership::new(vec![BTreeSet::from([1, 2])], BTreeMap::from_iter(nodes));
        let log_id = LogId::new(CommittedLeaderId::new(3, 2), 7);
        joined.membership_config = Arc::new(StoredMembership::new(Some(log_id), members));
        assert_eq!(
            describe(&lost, &joined),
            ["membership: voters {1, 2}, learners {3}"]
        );
    }
}
