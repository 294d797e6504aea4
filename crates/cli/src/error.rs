//! What a command can fail with, and the exit code of each kind.

use std::fmt;
use std::process::ExitCode;

/// A failed command: one line for the user and the exit code it maps to.
#[derive(Debug)]
pub struct Failure {
    /// Why the command failed.
    pub kind: Kind,
    /// The line printed after `error: `.
    pub message: String,
}

/// The classes of failure, one per exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The key, index or value asked for is not there (exit 1).
    NotFound,
    /// Bad arguments or input the user can correct (exit 2).
    Usage,
    /// A damaged file, an I/O error, or a database locked by another process (exit 3).
    Storage,
    /// Standard output was closed by its reader (`sift scan | head`): stop
    /// quietly, with success, as other command-line tools do.
    PipeClosed,
}

impl Kind {
    /// The process exit code.
    pub fn exit_code(self) -> ExitCode {
        ExitCode::from(match self {
            Self::NotFound => 1,
            Self::Usage => 2,
            Self::Storage => 3,
            Self::PipeClosed => 0,
        })
    }
}

/// What every command returns.
pub type Outcome<T = ()> = Result<T, Failure>;

impl Failure {
    /// A failure of kind `kind`.
    pub fn new(kind: Kind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// Exit 1.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(Kind::NotFound, message)
    }

    /// Exit 2.
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(Kind::Usage, message)
    }

    /// Exit 3.
    pub fn storage(message: impl Into<String>) -> Self {
        Self::new(Kind::Storage, message)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<siftdb::Error> for Failure {
    fn from(error: siftdb::Error) -> Self {
        let kind = match error {
            siftdb::Error::InvalidArgument(_) => Kind::Usage,
            _ => Kind::Storage,
        };
        Self::new(kind, error.to_string())
    }
}

impl From<std::io::Error> for Failure {
    fn from(error: std::io::Error) -> Self {
        let kind = match error.kind() {
            std::io::ErrorKind::BrokenPipe => Kind::PipeClosed,
            _ => Kind::Storage,
        };
        Self::new(kind, error.to_string())
    }
}

/// Adds what was being done to an I/O error ("reading data.csv: ...").
pub trait Context<T> {
    /// Prefixes the error's message with `what`.
    fn context(self, what: impl fmt::Display) -> Outcome<T>;
}

impl<T, E: Into<Failure>> Context<T> for Result<T, E> {
    fn context(self, what: impl fmt::Display) -> Outcome<T> {
        self.map_err(|error| {
            let failure = error.into();
            Failure::new(failure.kind, format!("{what}: {}", failure.message))
        })
    }
}
