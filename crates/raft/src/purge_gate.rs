//! [`PurgeGate`]: keeps a follower's log from being purged past the last
//! snapshot it could start again from.
//!
//! When a follower installs a snapshot, openraft queues the install on the
//! state machine's task and purges the log up to the snapshot at once,
//! beside it. A crash after the purge and before the install had made the
//! snapshot durable would leave a log purged past anything the node holds:
//! it could not start again. So, while a snapshot is arriving, a purge past
//! the current snapshot waits until the install has made its snapshot
//! current: the log answers openraft at once and purges in the background,
//! and its next change waits for that purge (`LogStore::purge`). (The state
//! machine's data may still be behind the snapshot after a crash:
//! [`crate::open_storage`] installs the current snapshot again then.)
//!
//! A purge `log_retention` asks for after a build never waits: it stops at the
//! snapshot just built.

use tokio::sync::watch;

/// What the log may be purged up to.
#[derive(Clone, Copy, Debug, Default)]
struct Durable {
    /// The last log index the current snapshot covers.
    covered: Option<u64>,
    /// A snapshot transfer began and its install has not made it current.
    arriving: bool,
    /// An install failed: the purge it came with must not happen.
    failed: bool,
}

impl Durable {
    fn allows(&self, index: u64) -> bool {
        !self.arriving || self.covered >= Some(index)
    }
}

/// The state machine's side: says what is durable.
#[derive(Debug)]
pub(crate) struct PurgeGate(watch::Sender<Durable>);

/// The log's side: waits until a purge is safe.
#[derive(Clone, Debug)]
pub(crate) struct PurgeWait(watch::Receiver<Durable>);

impl PurgeGate {
    /// A gate for a node whose current snapshot covers up to `covered`.
    pub(crate) fn new(covered: Option<u64>) -> Self {
        Self(watch::Sender::new(Durable {
            covered,
            ..Durable::default()
        }))
    }

    /// The log's side of the gate.
    pub(crate) fn waiter(&self) -> PurgeWait {
        PurgeWait(self.0.subscribe())
    }

    /// A snapshot transfer began.
    pub(crate) fn arriving(&self) {
        self.0.send_modify(|durable| durable.arriving = true);
    }

    /// A snapshot covering up to `index` is current and durable.
    pub(crate) fn covered(&self, index: Option<u64>) {
        self.0
            .send_modify(|durable| durable.covered = durable.covered.max(index));
    }

    /// The arriving snapshot is current and durable (after [`Self::covered`]).
    pub(crate) fn installed(&self) {
        self.0.send_modify(|durable| durable.arriving = false);
    }

    /// The install of the arriving snapshot failed.
    pub(crate) fn failed(&self) {
        self.0.send_modify(|durable| durable.failed = true);
    }
}

impl PurgeWait {
    /// Whether the log may be purged up to `index` now.
    pub(crate) fn purgeable(&self, index: u64) -> bool {
        self.0.borrow().allows(index)
    }

    /// Waits until the log may be purged up to `index`.
    ///
    /// # Errors
    /// If the install the purge came with failed (openraft stops the node:
    /// the purge must not be made durable).
    pub(crate) async fn until_purgeable(&mut self, index: u64) -> Result<(), &'static str> {
        let durable = self
            .0
            .wait_for(|d| d.failed || d.allows(index))
            .await
            .map_err(|_| "the state machine is closed")?;
        if durable.failed {
            return Err("the snapshot install the purge came with failed");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_purge_past_the_snapshot_waits_for_the_arriving_one() {
        runtime().block_on(async {
            let gate = PurgeGate::new(Some(5));
            let mut wait = gate.waiter();
            // Nothing arriving: a purge goes through.
            wait.until_purgeable(100).await.unwrap();
            gate.arriving();
            // Up to the current snapshot: goes through.
            wait.until_purgeable(5).await.unwrap();
            let past = tokio::time::timeout(Duration::from_millis(50), wait.until_purgeable(9));
            assert!(past.await.is_err(), "the purge did not wait");
            gate.covered(Some(9));
            gate.installed();
            wait.until_purgeable(9).await.unwrap();
        });
    }

    #[test]
    fn a_build_does_not_open_the_gate_for_an_arriving_snapshot() {
        runtime().block_on(async {
            let gate = PurgeGate::new(None);
            let mut wait = gate.waiter();
            gate.arriving();
            gate.covered(Some(3));
            wait.until_purgeable(3).await.unwrap();
            let past = tokio::time::timeout(Duration::from_millis(50), wait.until_purgeable(4));
            assert!(past.await.is_err(), "the purge did not wait");
        });
    }

    #[test]
    fn a_failed_install_fails_its_purge() {
        runtime().block_on(async {
            let gate = PurgeGate::new(None);
            let mut wait = gate.waiter();
            gate.arriving();
            gate.failed();
            assert!(wait.until_purgeable(1).await.is_err());
        });
    }
}
