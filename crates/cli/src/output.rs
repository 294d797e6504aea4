//! How keys and values travel between the command line and the store:
//! text, or hex with `--hex`; and how results are printed (text or JSON).

use std::io::{self, Write};

use serde_json::Value;

use crate::error::{Failure, Outcome};

/// The global `--json` and `--hex` flags, and standard output.
pub struct Output {
    /// Print JSON instead of text.
    pub json: bool,
    /// Keys and values are hex.
    pub hex: bool,
    out: io::BufWriter<io::StdoutLock<'static>>,
}

impl Output {
    /// Prints to standard output (buffered; flushed by [`Output::finish`]).
    pub fn new(json: bool, hex: bool) -> Self {
        Self {
            json,
            hex,
            out: io::BufWriter::new(io::stdout().lock()),
        }
    }

    /// The bytes a key or value argument stands for.
    pub fn parse(&self, what: &str, argument: &str) -> Outcome<Vec<u8>> {
        if self.hex {
            hex::decode(argument)
                .map_err(|e| Failure::usage(format!("{what} {argument:?} is not hex: {e}")))
        } else {
            Ok(argument.as_bytes().to_vec())
        }
    }

    /// [`Output::parse`] of an optional argument.
    pub fn parse_optional(&self, what: &str, argument: Option<&str>) -> Outcome<Option<Vec<u8>>> {
        argument.map(|a| self.parse(what, a)).transpose()
    }

    /// Stored bytes as printable text: hex with `--hex`, else the text if
    /// it is UTF-8, else escaped (`\xff`) so that nothing is lost.
    pub fn render(&self, bytes: &[u8]) -> String {
        if self.hex {
            hex::encode(bytes)
        } else {
            display_bytes(bytes)
        }
    }

    /// Stored bytes as a JSON string (as [`Output::render`]).
    pub fn json_bytes(&self, bytes: &[u8]) -> Value {
        Value::String(self.render(bytes))
    }

    /// Writes one line.
    pub fn line(&mut self, text: impl AsRef<str>) -> Outcome {
        writeln!(self.out, "{}", text.as_ref()).map_err(broken_pipe)
    }

    /// Writes one JSON value on one line.
    pub fn json_line(&mut self, value: &Value) -> Outcome {
        self.line(value.to_string())
    }

    /// Writes a key-value entry: `key<TAB>value` as text, an object as JSON,
    /// the key alone when `value` is `None`.
    pub fn entry(&mut self, key: &[u8], value: Option<&[u8]>) -> Outcome {
        if self.json {
            let mut object = serde_json::Map::new();
            object.insert("key".into(), self.json_bytes(key));
            if let Some(value) = value {
                object.insert("value".into(), self.json_bytes(value));
            }
            self.json_line(&Value::Object(object))
        } else {
            let line = match value {
                Some(value) => format!("{}\t{}", self.render(key), self.render(value)),
                None => self.render(key),
            };
            self.line(line)
        }
    }

    /// Flushes standard output.
    pub fn finish(mut self) -> Outcome {
        self.out.flush().map_err(broken_pipe)
    }
}

/// `bytes` as text if UTF-8, else with every byte outside printable ASCII escaped.
pub fn display_bytes(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => bytes.escape_ascii().to_string(),
    }
}

/// A write to standard output failed (a closed pipe ends the command quietly).
fn broken_pipe(error: io::Error) -> Failure {
    let failure = Failure::from(error);
    Failure::new(
        failure.kind,
        format!("writing to standard output: {failure}"),
    )
}
