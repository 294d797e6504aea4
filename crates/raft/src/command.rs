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
    /// Defines value index `name` on the JSON field at `pointer` (a JSON
    /// Pointer, such as `/user/name`) of the values, on every node: from
    /// then on `find` searches it through any node, and a node that
    /// restarts or installs a snapshot keeps it.
    DefineIndex {
        /// The index's name.
        name: String,
        /// The field, as a JSON Pointer.
        pointer: String,
    },
    /// Drops value index `name` on every node.
    DropIndex {
        /// The index's name.
        name: String,
    },
}

/// Where a command comes from, so that a retry is applied once (the Raft
/// dissertation, section 6.3): a client's session and the request's
/// number in it. A client numbers its requests 1, 2, ... and sends each
/// attempt of one request with the same number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// The client's session, chosen at random by the client.
    pub id: u64,
    /// The request's number in the session, from 1.
    pub seq: u64,
    /// The lowest number whose answer the client has not received: the
    /// state machine forgets the outcomes below it. A new session's first
    /// requests carry 1, which opens the session.
    pub first_unanswered: u64,
}

/// The payload of one Raft entry: a command, and the session it came
/// from. Without a session the command is applied every time it is
/// proposed (a retried put may then overwrite a later write).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// Who sent it; `None`: no exactly-once guarantee.
    pub session: Option<Session>,
    /// What it asks.
    pub command: Command,
}

impl From<Command> for Request {
    fn from(command: Command) -> Self {
        Self {
            session: None,
            command,
        }
    }
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
    /// The request's session is unknown to the state machine: it expired
    /// (no request for [`SESSION_TTL_ENTRIES`] log entries) or never
    /// began (its first requests were refused before they were proposed).
    /// Nothing was written now. If no earlier attempt of the request may
    /// have been applied, [`crate::Client`] sends it again in a new
    /// session; otherwise whether it was applied cannot be told.
    SessionExpired,
    /// The client had already received the answer to this request number
    /// (a delayed duplicate): nothing was written now.
    AlreadyAnswered,
    /// The session holds the outcomes of as many requests as it may
    /// (1,024) whose answers the client has not acknowledged: nothing was
    /// written, and the request may be sent again once earlier ones are
    /// answered. The node answers it as [`crate::api::ApiError::Refused`].
    TooManyUnanswered,
}

/// A session unused for this many log entries is forgotten, at the same
/// entry on every node. At 100,000 entries a second it lasts 100 s, more
/// than three times the client's default retry period (30 s).
pub const SESSION_TTL_ENTRIES: u64 = 10_000_000;

/// Longest user key: the state machine adds a one-byte prefix.
pub const MAX_KEY_LEN: usize = siftdb::MAX_KEY_LEN - 1;

/// The most bytes of keys and values one command carries: one value at the
/// engine's limit and 16 MiB more. A command is one log entry, sent whole
/// in one AppendEntries message, so this bounds a message (with
/// [`crate::log_store::MAX_APPEND_BYTES`] of entries before it) far below
/// a node's body limit, and the time to send it within the RPC timeout.
pub const MAX_COMMAND_BYTES: usize = siftdb::MAX_VALUE_LEN + (16 << 20);

impl Op {
    /// The key written.
    pub fn key(&self) -> &[u8] {
        match self {
            Self::Put { key, .. } | Self::Delete { key } => key,
        }
    }
}

impl Command {
    /// Bytes of the keys and values it carries, its checks' included.
    pub fn bytes(&self) -> usize {
        let (checks, ops) = match self {
            Self::Write(ops) => (&[][..], ops),
            Self::Txn { checks, ops } => (checks.as_slice(), ops),
            Self::DefineIndex { name, pointer } => return name.len() + pointer.len(),
            Self::DropIndex { name } => return name.len(),
        };
        let checked = checks
            .iter()
            .map(|c| c.key.len() + c.value.as_ref().map_or(0, Vec::len));
        let written = ops.iter().map(|op| match op {
            Op::Put { key, value } => key.len() + value.len(),
            Op::Delete { key } => key.len(),
        });
        checked.chain(written).sum()
    }

    /// Whether every key and value is within the limits: why not, if not.
    ///
    /// # Errors
    /// A message naming the limit a key or value is over.
    pub fn validate(&self) -> Result<(), String> {
        let (checks, ops) = match self {
            Self::Write(ops) => (&[][..], ops),
            Self::Txn { checks, ops } => (checks.as_slice(), ops),
            // The engine checks a definition as it applies it, alike on
            // every node.
            Self::DefineIndex { .. } | Self::DropIndex { .. } => (&[][..], &Vec::new()),
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
        let bytes = self.bytes();
        if bytes > MAX_COMMAND_BYTES {
            return Err(format!(
                "a command of {bytes} bytes of keys and values is over the limit of {MAX_COMMAND_BYTES}"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(key: &[u8], len: usize) -> Op {
        Op::Put {
            key: key.to_vec(),
            value: vec![0; len],
        }
    }

    #[test]
    fn a_command_is_refused_past_each_limit() {
        let ok = Command::Write(vec![put(b"a", siftdb::MAX_VALUE_LEN)]);
        assert_eq!(ok.validate(), Ok(()));
        let value = Command::Write(vec![put(b"a", siftdb::MAX_VALUE_LEN + 1)]);
        assert!(value.validate().unwrap_err().contains("value"));
        let key = Command::Write(vec![Op::Delete {
            key: vec![0; MAX_KEY_LEN + 1],
        }]);
        assert!(key.validate().unwrap_err().contains("key"));
        // Two values each within the limit, together over the command's.
        let half = MAX_COMMAND_BYTES / 2;
        let total = Command::Write(vec![put(b"a", half), put(b"b", half)]);
        assert_eq!(total.bytes(), MAX_COMMAND_BYTES + 2);
        assert!(total.validate().unwrap_err().contains("command"));
        // A transaction's checks count too.
        let checked = Command::Txn {
            checks: vec![Check {
                key: b"c".to_vec(),
                value: Some(vec![0; half]),
            }],
            ops: vec![put(b"a", half)],
        };
        assert!(checked.validate().unwrap_err().contains("command"));
    }
}
