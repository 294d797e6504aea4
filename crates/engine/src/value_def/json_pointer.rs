//! One field of a JSON document, found by a JSON Pointer (RFC 6901)
//! without building the document's tree.
//!
//! Indexing and searching by a JSON field extract it from every stored
//! value, so this is on the write path of every indexed table and on the
//! scan path of every search. Parsing a whole document into a
//! `serde_json::Value` allocates every key and string in it; here the parser
//! walks the document once, compares keys in place, parses what is off the
//! path without keeping it, and builds a value only for the field itself.
//!
//! The answer is exactly what `serde_json::Value::pointer` gives on the
//! parsed document (leaves already written depend on it): the last of
//! duplicate keys wins, `~1` and `~0` stand for `/` and `~`, an array index
//! is decimal without a sign or leading zero, and a document that is not
//! valid JSON (trailing bytes included) has no fields.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// The value at `pointer` in the JSON document `document`, or `None` if
/// the document is not JSON or has nothing there.
pub(crate) fn find(document: &[u8], pointer: &str) -> Option<Value> {
    let tokens: Vec<Cow<'_, str>> = if pointer.is_empty() {
        Vec::new()
    } else {
        pointer
            .strip_prefix('/')?
            .split('/')
            .map(unescape)
            .collect()
    };
    let mut parser = serde_json::Deserializer::from_slice(document);
    let found = Walk(&tokens).deserialize(&mut parser).ok()?;
    parser.end().ok()?;
    found
}

/// A reference token with `~1` and `~0` replaced (in that order, as RFC
/// 6901 says).
fn unescape(token: &str) -> Cow<'_, str> {
    if token.contains('~') {
        Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(token)
    }
}

/// An array index as JSON Pointer spells it: digits, no sign, no leading zero.
fn array_index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

/// Parses one JSON value, following the remaining tokens into it.
struct Walk<'t>(&'t [Cow<'t, str>]);

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = Option<Value>;

    fn deserialize<D: Deserializer<'de>>(self, parser: D) -> Result<Self::Value, D::Error> {
        match self.0.split_first() {
            None => serde::Deserialize::deserialize(parser).map(Some),
            Some((token, rest)) => Step {
                token: Some(token),
                rest,
            }
            .deserialize(parser),
        }
    }
}

/// Parses one JSON value, following `token`, then `rest`, into it: a
/// scalar has no fields, so the path ends in nothing there. Without a
/// token the value is only parsed, as strictly as the tree would parse it
/// (serde's `IgnoredAny` accepts numbers the tree refuses, such as `1e400`).
struct Step<'t> {
    token: Option<&'t str>,
    rest: &'t [Cow<'t, str>],
}

/// Parses a value off the path.
const SKIP: Step<'static> = Step {
    token: None,
    rest: &[],
};

impl<'de> DeserializeSeed<'de> for Step<'_> {
    type Value = Option<Value>;

    fn deserialize<D: Deserializer<'de>>(self, parser: D) -> Result<Self::Value, D::Error> {
        parser.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Step<'_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(matches) = map.next_key_seed(KeyIs(self.token))? {
            if matches {
                // A later duplicate replaces an earlier one, as in a parsed map.
                found = map.next_value_seed(Walk(self.rest))?;
            } else {
                map.next_value_seed(SKIP)?;
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let wanted = self.token.and_then(array_index);
        let mut found = None;
        let mut at = 0;
        loop {
            let element = if Some(at) == wanted {
                seq.next_element_seed(Walk(self.rest))?.map(|f| found = f)
            } else {
                seq.next_element_seed(SKIP)?.map(drop)
            };
            if element.is_none() {
                return Ok(found);
            }
            at += 1;
        }
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// Whether an object key equals the token (never, without one), compared
/// without copying the key.
struct KeyIs<'t>(Option<&'t str>);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, parser: D) -> Result<bool, D::Error> {
        parser.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, key: &str) -> Result<bool, E> {
        Ok(self.0 == Some(key))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// What the parsed tree answers: the reference.
    fn by_tree(document: &[u8], pointer: &str) -> Option<Value> {
        let tree: Value = serde_json::from_slice(document).ok()?;
        tree.pointer(pointer).cloned()
    }

    fn same(document: &str, pointer: &str) {
        assert_eq!(
            find(document.as_bytes(), pointer),
            by_tree(document.as_bytes(), pointer),
            "{document} at {pointer:?}"
        );
    }

    #[test]
    fn agrees_with_the_tree_on_the_rules_cases() {
        let doc = r#"{"a":{"b":[10,{"c":"x"},null],"a/b":1,"m~n":2,"":3},
                      "dup":1,"dup":{"z":2},"esc\"k":"v\u00e9","n":-0.0}"#;
        assert!(
            by_tree(doc.as_bytes(), "").is_some(),
            "the document is JSON"
        );
        for pointer in [
            "",
            "/",
            "/a",
            "/a/b",
            "/a/b/0",
            "/a/b/1/c",
            "/a/b/2",
            "/a/b/3",
            "/a/b/01",
            "/a/b/+1",
            "/a/b/-1",
            "/a/b/x",
            "/a/a~1b",
            "/a/m~0n",
            "/a/",
            "/dup",
            "/dup/z",
            "/esc\"k",
            "/n",
            "/big",
            "/missing",
            "a",
            "/a/b/1/c/d",
        ] {
            same(doc, pointer);
        }
        for broken in [
            r#"{"a":1"#,
            r#"{"a":1} x"#,
            "nope",
            "",
            r#"{"a":[1,]}"#,
            r#"["\ud800"]"#,
            // Off the path, but still a number the tree refuses.
            r#"{"a":1,"b":1e400}"#,
        ] {
            same(broken, "/a");
            assert_eq!(find(broken.as_bytes(), "/a"), None);
        }
        same(" [1, [2, 3]] ", "/1/0");
        same("7", "");
    }

    /// JSON documents of a few nested levels over a small set of keys, so
    /// that random pointers often hit (and duplicates occur).
    fn document() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            any::<bool>().prop_map(|b| b.to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            (-1e6f64..1e6).prop_map(|x| x.to_string()),
            "[a-c~/\"\\\\é]{0,3}".prop_map(|s| serde_json::to_string(&s).unwrap_or_default()),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec(("[ab~/]{0,2}", inner), 0..4).prop_map(|fields| {
                    let fields: Vec<String> = fields
                        .into_iter()
                        .map(|(k, v)| {
                            format!("{}:{v}", serde_json::to_string(&k).unwrap_or_default())
                        })
                        .collect();
                    format!("{{{}}}", fields.join(","))
                }),
            ]
        })
    }

    proptest! {
        // Cheap cases: many, so duplicates, escapes and cuts all come up.
        #![proptest_config(ProptestConfig::with_cases(4_000))]

        #[test]
        fn agrees_with_the_tree(
            document in document(),
            pointer in "(/([ab0-2]|~0|~1|~2|01|){0,4})|[ab]",
            cut in any::<prop::sample::Index>(),
            damage in any::<bool>(),
        ) {
            same(&document, &pointer);
            // Cut documents: mostly not JSON any more.
            if damage {
                let end = cut.index(document.len() + 1);
                if let Some(prefix) = document.get(..end) {
                    same(prefix, &pointer);
                }
            }
        }
    }
}
