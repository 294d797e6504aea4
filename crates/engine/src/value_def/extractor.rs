//! [`Extractor`]: which bytes of a stored value an index holds.

use std::fmt;
use std::sync::Arc;

/// A user function that yields any number of values (tags) for one stored
/// value, by calling its second argument once per value.
pub type ExtractFn = Arc<dyn Fn(&[u8], &mut dyn FnMut(&[u8])) + Send + Sync>;

/// What an index extracts from each stored value. Every extracted value is
/// hashed once (`KeyHash::of`) into the leaf of the table that stores the
/// entry; a search hashes the searched value the same way.
#[derive(Clone)]
#[non_exhaustive]
pub enum Extractor {
    /// The whole value, byte for byte.
    WholeValue,
    /// One field of a JSON value, named by a JSON Pointer (RFC 6901):
    /// `/user/name` is field `name` of object `user`, `/tags/0` the first
    /// element of array `tags`, `~1` and `~0` stand for `/` and `~` inside
    /// a name, and the empty path is the whole document.
    ///
    /// A string field yields its text (unescaped, UTF-8), a number or
    /// boolean its JSON text as `serde_json` prints it (`42`, `1.5`,
    /// `true`), an object or array its compact JSON text. A missing field,
    /// a `null`, or a value that is not JSON yields nothing.
    JsonField(String),
    /// Field `column` (0 first) of a record whose fields are separated by
    /// `separator`, such as a CSV line. Fields are split at every separator
    /// byte (no quoting); a record with fewer fields yields nothing, an
    /// empty field yields the empty value.
    Delimited {
        /// Field number, 0 first.
        column: usize,
        /// The byte between fields (`b','` for CSV).
        separator: u8,
    },
    /// A user function, possibly yielding several values per entry. Only
    /// `name` is stored in the manifest: the function must be supplied
    /// again (with the same name) every time the database is opened.
    Custom {
        /// Identifies the function across opens.
        name: String,
        /// The function.
        function: ExtractFn,
    },
}

impl fmt::Debug for Extractor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.description())
    }
}

impl Extractor {
    /// [`Extractor::JsonField`] at the JSON Pointer `pointer`.
    #[must_use]
    pub fn json_field(pointer: impl Into<String>) -> Self {
        Self::JsonField(pointer.into())
    }

    /// The JSON Pointer of `field`: itself if it is one (it starts with
    /// `/`), else the pointer to the top-level field of that name, with `~`
    /// and `/` escaped.
    #[must_use]
    pub fn pointer_of(field: &str) -> String {
        if field.starts_with('/') {
            field.to_owned()
        } else {
            format!("/{}", field.replace('~', "~0").replace('/', "~1"))
        }
    }

    /// [`Extractor::Delimited`].
    #[must_use]
    pub fn delimited(column: usize, separator: u8) -> Self {
        Self::Delimited { column, separator }
    }

    /// [`Extractor::Custom`] calling `function`.
    #[must_use]
    pub fn custom(
        name: impl Into<String>,
        function: impl Fn(&[u8], &mut dyn FnMut(&[u8])) + Send + Sync + 'static,
    ) -> Self {
        Self::Custom {
            name: name.into(),
            function: Arc::new(function),
        }
    }

    /// Calls `out` once per value extracted from `value` (zero or more).
    pub fn extract(&self, value: &[u8], out: &mut dyn FnMut(&[u8])) {
        match self {
            Self::WholeValue => out(value),
            Self::JsonField(pointer) => json_field(value, pointer, out),
            Self::Delimited { column, separator } => {
                if let Some(field) = value.split(|b| b == separator).nth(*column) {
                    out(field);
                }
            }
            Self::Custom { function, .. } => function(value, out),
        }
    }

    /// A one-line description: `whole value`, `json /user/name`,
    /// `column 2 of ','-separated`, `custom "tags"`.
    #[must_use]
    pub fn description(&self) -> String {
        match self {
            Self::WholeValue => "whole value".into(),
            Self::JsonField(pointer) => format!("json {pointer}"),
            Self::Delimited { column, separator } => format!(
                "column {column} of {:?}-separated",
                char::from(*separator).escape_default().to_string()
            ),
            Self::Custom { name, .. } => format!("custom {name:?}"),
        }
    }

    /// Whether two extractors extract the same way (custom functions are
    /// compared by name: a closure cannot be compared).
    pub(crate) fn same_as(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::WholeValue, Self::WholeValue) => true,
            (Self::JsonField(a), Self::JsonField(b)) => a == b,
            (
                Self::Delimited { column, separator },
                Self::Delimited {
                    column: c,
                    separator: s,
                },
            ) => column == c && separator == s,
            (Self::Custom { name, .. }, Self::Custom { name: n, .. }) => name == n,
            _ => false,
        }
    }
}

/// The JSON field at `pointer` of `value`, as [`Extractor::JsonField`] says.
fn json_field(value: &[u8], pointer: &str, out: &mut dyn FnMut(&[u8])) {
    match super::json_pointer::find(value, pointer) {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::String(text)) => out(text.as_bytes()),
        Some(other) => out(other.to_string().as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(extractor: &Extractor, value: &[u8]) -> Vec<Vec<u8>> {
        let mut found = Vec::new();
        extractor.extract(value, &mut |v| found.push(v.to_vec()));
        found
    }

    fn one(text: &str) -> Vec<Vec<u8>> {
        vec![text.as_bytes().to_vec()]
    }

    #[test]
    fn whole_value_yields_the_value() {
        assert_eq!(all(&Extractor::WholeValue, b"abc"), one("abc"));
        assert_eq!(all(&Extractor::WholeValue, b""), one(""));
    }

    #[test]
    fn json_fields_by_pointer() {
        let doc = br#"{"user":{"name":"ada","age":36,"admin":true,"score":1.50,
            "nick":null,"tags":["x","y"],"a/b":{"~":"esc"}}, "top":"t\u00e9"}"#;
        let get = |p: &str| all(&Extractor::json_field(p), doc);
        assert_eq!(get("/user/name"), one("ada"));
        assert_eq!(get("/user/age"), one("36"));
        assert_eq!(get("/user/admin"), one("true"));
        assert_eq!(get("/user/score"), one("1.5"));
        assert_eq!(get("/user/tags/1"), one("y"));
        assert_eq!(get("/user/tags"), one(r#"["x","y"]"#));
        assert_eq!(get("/user/a~1b/~0"), one("esc"));
        assert_eq!(get("/top"), one("té"));
        for nothing in [
            "/user/nick",
            "/user/missing",
            "/user/name/deeper",
            "/user/tags/2",
            "x",
        ] {
            assert!(get(nothing).is_empty(), "{nothing}");
        }
        let field = Extractor::json_field("/a");
        assert!(all(&field, b"not json").is_empty());
        assert!(all(&field, br#"{"a":1"#).is_empty(), "truncated JSON");
        assert!(all(&field, b"[1,2]").is_empty());
        assert_eq!(all(&Extractor::json_field(""), b" 7 "), one("7"));
    }

    #[test]
    fn delimited_columns() {
        let csv = |column| all(&Extractor::delimited(column, b','), b"a,,c");
        assert_eq!(csv(0), one("a"));
        assert_eq!(csv(1), one(""));
        assert_eq!(csv(2), one("c"));
        assert!(csv(3).is_empty());
        assert!(csv(usize::MAX).is_empty());
        assert_eq!(
            all(&Extractor::delimited(0, b'\t'), b"no tabs"),
            one("no tabs")
        );
        assert_eq!(all(&Extractor::delimited(0, b','), b""), one(""));
    }

    #[test]
    fn custom_functions_may_yield_several_values() {
        let tags = Extractor::custom("words", |value, out| {
            for word in value.split(|&b| b == b' ').filter(|w| !w.is_empty()) {
                out(word);
            }
        });
        assert_eq!(
            all(&tags, b"red  green blue"),
            [b"red".to_vec(), b"green".to_vec(), b"blue".to_vec()]
        );
        assert!(all(&tags, b"   ").is_empty());
        assert_eq!(tags.description(), "custom \"words\"");
        assert!(tags.same_as(&Extractor::custom("words", |_, _| {})));
        assert!(!tags.same_as(&Extractor::custom("other", |_, _| {})));
        assert!(!tags.same_as(&Extractor::WholeValue));
    }

    #[test]
    fn descriptions() {
        assert_eq!(Extractor::WholeValue.description(), "whole value");
        assert_eq!(Extractor::json_field("/a/b").description(), "json /a/b");
        assert_eq!(
            Extractor::delimited(2, b',').description(),
            "column 2 of \",\"-separated"
        );
    }
}
