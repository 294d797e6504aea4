//! What a client's write or read can end in, one enum per kind of
//! operation (as redb gives each operation its own): a caller matches only
//! the cases its operation has, and each case says what to do next.
//!
//! The node answers with [`ApiError`]; the client turns the last answer of
//! its attempts into these, knowing whether any attempt may have taken
//! effect.

use crate::api::ApiError;

/// Why a write ([`crate::Client::write`], `put`, `delete`) failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// The write is invalid (a key or value over the limits, a bad
    /// command): it was not applied, and never will be.
    #[error("invalid write: {0}")]
    Invalid(String),
    /// Not applied: every attempt was turned away, or found no leader,
    /// until the client gave up. Safe to send again.
    #[error("not applied: {0}")]
    NotApplied(String),
    /// It may or may not have been applied: an attempt was lost after it
    /// was sent (no quorum in time, a connection cut), and the client gave
    /// up before a retry could tell; or the session expired. Read before
    /// writing again.
    #[error("outcome unknown: {0}")]
    Unknown(String),
    /// The node's storage failed (damaged data, an I/O error), or its Raft
    /// stopped: the client does not retry at that node, whose operator
    /// must look. Whether the write was applied is unknown.
    #[error("node failed: {0}")]
    Failed(String),
    /// The node refused the client's token, or its lack of one: not
    /// applied. Set the cluster's token ([`crate::Client::with_token`]).
    #[error("unauthorized: {0}")]
    Unauthorized(String),
}

/// Why a read ([`crate::Client::get`], `scan`, `find`, a page) failed. A
/// read changes nothing, whatever its end.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The read is invalid (no value index by that name, a key over the
    /// limit).
    #[error("invalid read: {0}")]
    Invalid(String),
    /// No leader answered before the client gave up. Safe to read again.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// The node's storage failed, or its Raft stopped: the client does not
    /// retry at that node, whose operator must look.
    #[error("node failed: {0}")]
    Failed(String),
    /// The node refused the client's token, or its lack of one.
    #[error("unauthorized: {0}")]
    Unauthorized(String),
}

impl ApiError {
    /// A request that failed on its way to another node (`to`, and why):
    /// a connection never made carried nothing; any other failure may have
    /// come after the node took the request.
    pub(crate) fn in_transit(to: &str, error: &reqwest::Error) -> Self {
        let why = format!("{to}: {error}");
        if error.is_connect() {
            Self::Refused(why)
        } else {
            Self::Unavailable(why)
        }
    }

    /// Whether asking again (the same node, or the leader it names) can
    /// succeed.
    pub(crate) fn is_retryable(&self) -> bool {
        match self {
            Self::NotLeader { .. } | Self::Unavailable(_) | Self::Refused(_) => true,
            Self::Invalid(_) | Self::Storage(_) | Self::Stopped(_) | Self::Unauthorized(_) => false,
        }
    }

    /// Whether a write answered this may have taken effect.
    pub(crate) fn may_have_applied(&self) -> bool {
        match self {
            Self::Unavailable(_) | Self::Stopped(_) | Self::Storage(_) => true,
            Self::NotLeader { .. }
            | Self::Refused(_)
            | Self::Invalid(_)
            | Self::Unauthorized(_) => false,
        }
    }

    /// The write error of a write whose last attempt was answered this;
    /// `maybe_applied`: whether any attempt may have taken effect.
    pub(crate) fn into_write_error(self, maybe_applied: bool) -> WriteError {
        match self {
            Self::Invalid(why) => WriteError::Invalid(why),
            Self::Unauthorized(why) => WriteError::Unauthorized(why),
            Self::Storage(why) | Self::Stopped(why) => WriteError::Failed(why),
            error if maybe_applied => WriteError::Unknown(error.to_string()),
            error => WriteError::NotApplied(error.to_string()),
        }
    }
}

impl From<ApiError> for ReadError {
    fn from(error: ApiError) -> Self {
        match error {
            ApiError::Invalid(why) => Self::Invalid(why),
            ApiError::Unauthorized(why) => Self::Unauthorized(why),
            ApiError::Storage(why) | ApiError::Stopped(why) => Self::Failed(why),
            error @ (ApiError::NotLeader { .. }
            | ApiError::Unavailable(_)
            | ApiError::Refused(_)) => Self::Unavailable(error.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_is_unknown_only_if_an_attempt_may_have_applied_it() {
        let refused = ApiError::Refused("busy".into());
        assert!(matches!(
            refused.clone().into_write_error(false),
            WriteError::NotApplied(_)
        ));
        assert!(matches!(
            refused.into_write_error(true),
            WriteError::Unknown(_)
        ));
        let lost = ApiError::Unavailable("no quorum".into());
        assert!(lost.may_have_applied() && lost.is_retryable());
        assert!(matches!(
            ApiError::Invalid("too large".into()).into_write_error(true),
            WriteError::Invalid(_)
        ));
        let refused = ApiError::Unauthorized("no token".into());
        assert!(!refused.is_retryable() && !refused.may_have_applied());
        assert!(matches!(
            refused.into_write_error(true),
            WriteError::Unauthorized(_)
        ));
        let stopped = ApiError::Stopped("fatal".into());
        assert!(!stopped.is_retryable());
        assert!(matches!(
            stopped.into_write_error(false),
            WriteError::Failed(_)
        ));
    }

    #[test]
    fn reads_fail_as_invalid_unavailable_or_failed() {
        let leaderless = ApiError::NotLeader { leader: None };
        assert!(matches!(
            ReadError::from(leaderless),
            ReadError::Unavailable(_)
        ));
        assert!(matches!(
            ReadError::from(ApiError::Storage("damaged".into())),
            ReadError::Failed(_)
        ));
        assert!(matches!(
            ReadError::from(ApiError::Invalid("no index".into())),
            ReadError::Invalid(_)
        ));
    }
}
