//! What one Raft entry asks of the state machine, and what applying it
//! answers.

use serde::{Deserialize, Serialize};

/// One write of a batch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// Sets `key` to `value`.
    Put {
        /// The key.
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
        /// The value.
        #[serde(with = "serde_bytes")]
        value: Vec<u8>,
    },
    /// Removes `key`.
    Delete {
        /// The key.
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
    },
}

/// What a transaction read, checked again when its entry is applied.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// The key read.
    #[serde(with = "serde_bytes")]
    pub key: Vec<u8>,
    /// Its value then (`None`: absent).
    #[serde(with = "serde_bytes")]
    pub value: Option<Vec<u8>>,
}

/// The payload of one Raft entry: applied atomically, in log order, on
/// every node alike.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    /// A write batch.
    Write(Vec<Op>),
    /// A transaction: its writes apply only if every key it read still has
    /// the value it read (optimistic, checked at apply time, so every node
    /// decides alike).
    Txn {
        /// What it read.
        checks: Vec<Check>,
        /// What it writes.
        ops: Vec<Op>,
    },
}

/// What applying an entry did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// The writes were applied.
    Applied,
    /// A transaction's check failed on this key; nothing was written.
    Conflict {
        /// The key whose value changed since the transaction read it.
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
    },
    /// The command was invalid (a key or value over the limits); nothing
    /// was written. Clients check first, so only a client that does not
    /// meets this.
    Rejected {
        /// Why.
        reason: String,
    },
    /// The entry was not a command (a blank or membership entry).
    Internal,
}

/// Longest user key: the state machine adds a one-byte prefix.
pub const MAX_KEY_LEN: usize = siftdb::MAX_KEY_LEN - 1;

impl Op {
    /// The key written.
    pub fn key(&self) -> &[u8] {
        match self {
            Self::Put { key, .. } | Self::Delete { key } => key,
        }
    }
}

impl Command {
    /// Whether every key and value is within the limits: why not, if not.
    ///
    /// # Errors
    /// A message naming the limit a key or value is over.
    pub fn validate(&self) -> Result<(), String> {
        let (checks, ops) = match self {
            Self::Write(ops) => (&[][..], ops),
            Self::Txn { checks, ops } => (checks.as_slice(), ops),
        };
        let keys = checks
            .iter()
            .map(|c| c.key.as_slice())
            .chain(ops.iter().map(Op::key));
        if let Some(key) = keys.into_iter().find(|k| k.len() > MAX_KEY_LEN) {
            return Err(format!(
                "a key of {} bytes is over the limit of {MAX_KEY_LEN}",
                key.len()
            ));
        }
        for op in ops {
            if let Op::Put { value, .. } = op
                && value.len() > siftdb::MAX_VALUE_LEN
            {
                return Err(format!(
                    "a value of {} bytes is over the limit of {}",
                    value.len(),
                    siftdb::MAX_VALUE_LEN
                ));
            }
        }
        Ok(())
    }
}
