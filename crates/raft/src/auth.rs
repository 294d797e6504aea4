//! A cluster's shared secret: every request to a node but its health check
//! carries it, clients' and peers' alike, as `Authorization: Bearer TOKEN`.
//! It travels in clear: TLS belongs in front of the nodes (a reverse proxy)
//! until it is built in (`docs/replication.md`).

use std::path::Path;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The shared secret. Its `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(Arc<str>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// `secret`, trimmed of surrounding whitespace; refused if that leaves
    /// it empty, or if it holds what an HTTP header cannot.
    ///
    /// # Errors
    /// Why the secret cannot be a token.
    pub fn new(secret: &str) -> Result<Self, String> {
        let secret = secret.trim();
        if secret.is_empty() {
            return Err("the token is empty".into());
        }
        if !secret.bytes().all(|b| b.is_ascii_graphic() || b == b' ') {
            return Err("the token must be printable ASCII (no control characters)".into());
        }
        Ok(Self(secret.into()))
    }

    /// The token in the file at `path` (its whole contents, trimmed).
    /// Refused if the file is empty, or (on Unix) if users other than its
    /// owner and group may read it: a token anyone on the machine can read
    /// protects nothing.
    ///
    /// # Errors
    /// A message naming the file and what is wrong with it.
    pub fn read_file(path: &Path) -> Result<Self, String> {
        let shown = path.display();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path)
                .map_err(|e| format!("token file {shown}: {e}"))?
                .permissions()
                .mode();
            if mode & 0o007 != 0 {
                return Err(format!(
                    "token file {shown} is accessible to every user (mode {:o}): chmod 600 it",
                    mode & 0o777
                ));
            }
        }
        let secret =
            std::fs::read_to_string(path).map_err(|e| format!("token file {shown}: {e}"))?;
        Self::new(&secret).map_err(|why| format!("token file {shown}: {why}"))
    }

    /// The `Authorization` header's value.
    fn bearer(&self) -> String {
        format!("Bearer {}", self.0)
    }

    /// Whether `presented` is this token, in time that does not depend on
    /// where they differ (so an attacker cannot find it byte by byte).
    fn matches(&self, presented: &[u8]) -> bool {
        constant_time_eq(presented, self.0.as_bytes())
    }
}

/// Whether `a == b`, looking at every byte of `expected` whatever `a`
/// holds: the time taken tells only `expected`'s length, which is fixed.
fn constant_time_eq(a: &[u8], expected: &[u8]) -> bool {
    let mut differ = a.len() ^ expected.len();
    for (i, byte) in expected.iter().enumerate() {
        let other = a.get(i).copied().unwrap_or(!byte);
        differ |= usize::from(std::hint::black_box(other ^ byte));
    }
    differ == 0
}

/// `request` with `token`, if there is one.
pub(crate) fn authorize(
    request: reqwest::RequestBuilder,
    token: Option<&Token>,
) -> reqwest::RequestBuilder {
    match token {
        Some(token) => request.header(header::AUTHORIZATION, token.bearer()),
        None => request,
    }
}

/// What a 401 answer says.
pub(crate) const REFUSED: &str = "unauthorized";

/// Lets a request through if it carries the node's token (or the node has
/// none); otherwise answers 401 without looking further.
pub(crate) async fn require(
    State(token): State<Option<Token>>,
    request: Request,
    next: Next,
) -> Response {
    match token {
        Some(token) if !presents(request.headers(), &token) => refuse(request.headers()),
        _ => next.run(request).await,
    }
}

fn presents(headers: &HeaderMap, token: &Token) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.as_bytes().strip_prefix(b"Bearer "))
        .is_some_and(|presented| token.matches(presented))
}

fn refuse(headers: &HeaderMap) -> Response {
    let why = if headers.contains_key(header::AUTHORIZATION) {
        "the token presented is not this node's"
    } else {
        "this node requires a token (sift --token-file, Client::with_token, siftdb.Client(token=...))"
    };
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        format!("{REFUSED}: {why}"),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_only_when_every_byte_and_the_length_agree() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secreT", b"secret"));
        assert!(!constant_time_eq(b"secre", b"secret"));
        assert!(!constant_time_eq(b"secrets", b"secret"));
        assert!(!constant_time_eq(b"", b"secret"));
        // A byte that equals its own complement would pass unnoticed.
        assert!(!constant_time_eq(b"\xff", b"\x00"));
    }

    #[test]
    fn a_token_is_trimmed_and_never_empty_or_unprintable() {
        assert_eq!(Token::new(" abc\n").unwrap().bearer(), "Bearer abc");
        assert!(Token::new(" \n").unwrap_err().contains("empty"));
        assert!(Token::new("a\0b").is_err());
        assert_eq!(format!("{:?}", Token::new("abc").unwrap()), "Token(..)");
    }

    #[cfg(unix)]
    #[test]
    fn a_token_file_readable_by_everyone_or_empty_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "s3cret\n").unwrap();
        let mode = |m| std::fs::set_permissions(&path, std::fs::Permissions::from_mode(m));
        mode(0o644).unwrap();
        let open = Token::read_file(&path).unwrap_err();
        assert!(
            open.contains("every user") && open.contains("chmod 600"),
            "{open}"
        );
        mode(0o600).unwrap();
        assert_eq!(
            Token::read_file(&path).unwrap(),
            Token::new("s3cret").unwrap()
        );
        std::fs::write(&path, "\n").unwrap();
        assert!(Token::read_file(&path).unwrap_err().contains("empty"));
        let missing = Token::read_file(&dir.path().join("none")).unwrap_err();
        assert!(missing.contains("none"), "{missing}");
    }
}
