//! [`Secret`]: the type of every config field that holds a credential, and [`secrets_in`], the
//! one walk that finds them all.
//!
//! The output redactor learns the credentials of the loaded config from their type, not from a
//! list of field names kept by hand: a field typed `Secret` (or a map of them) is redacted
//! wherever its value lands, and a new credential field cannot be forgotten as long as it is
//! typed so (a test of `config/` fails when a field named like a credential is not).
//!
//! A `Secret` reads and writes as a plain string (YAML and JSON see no difference). Its
//! `Serialize` marks the value as a newtype with a private name, which serde formats ignore and
//! [`secrets_in`] recognises; `Debug` never prints the value.

use serde::ser::{self, Serialize, Serializer};
use serde::Deserialize;
use std::fmt;

/// A credential from the config: an API key, a token, a header value, a password.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

/// The newtype name [`secrets_in`] looks for.
const MARK: &str = "tackle_protocol::Secret";

impl Secret {
    /// Wraps a credential so it serialises as one and is found by [`secrets_in`].
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, to send where it belongs (a header, a child's environment).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The value, consuming the wrapper; for handing it on to what stores or sends it.
    pub fn into_inner(self) -> String {
        self.0
    }
}

impl std::ops::Deref for Secret {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Secret {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self(value.to_string())
    }
}

impl PartialEq<str> for Secret {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Secret {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_empty() {
            "Secret(\"\")"
        } else {
            "Secret([redacted])"
        })
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_newtype_struct(MARK, &self.0)
    }
}

/// One credential found by [`secrets_in`]: where it is (`backends[0].api_key`,
/// `mcp_servers.gh.headers.Authorization`, the path syntax of config errors) and its value.
#[derive(Clone, PartialEq, Eq)]
pub struct Found {
    /// Where the credential is, in the path syntax of config errors (`backends[0].api_key`).
    pub path: String,
    /// The credential itself; never printed by `Debug`.
    pub value: String,
}

impl fmt::Debug for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Found")
            .field("path", &self.path)
            .field("len", &self.value.len())
            .finish()
    }
}

/// Every [`Secret`] inside `value` (a whole [`crate::config::Config`], usually), in
/// serialisation order, empty ones included (the caller decides what an empty key means).
pub fn secrets_in<T: Serialize + ?Sized>(value: &T) -> Vec<Found> {
    let mut walk = Walk::default();
    // Only `Secret` strings are kept and nothing can fail: the walk never errors.
    let _ = value.serialize(&mut walk);
    walk.found
}

/// The non-blank values of [`secrets_in`].
pub fn values<T: Serialize + ?Sized>(value: &T) -> Vec<String> {
    secrets_in(value)
        .into_iter()
        .map(|f| f.value)
        .filter(|v| !v.trim().is_empty())
        .collect()
}

/// A serializer that writes nothing: it keeps the path it is at and, inside a `Secret`, the
/// string.
#[derive(Default)]
struct Walk {
    path: Vec<String>,
    /// Inside a `Secret`: the next string is its value.
    in_secret: bool,
    found: Vec<Found>,
    /// Entries of the sequence being walked, per level.
    index: Vec<usize>,
}

impl Walk {
    fn here(&self) -> String {
        let mut out = String::new();
        for part in &self.path {
            if part.starts_with('[') || out.is_empty() {
                out.push_str(part);
            } else {
                out.push('.');
                out.push_str(part);
            }
        }
        out
    }

    fn nested<T: Serialize + ?Sized>(&mut self, part: String, value: &T) -> Result<(), Never> {
        self.path.push(part);
        let r = value.serialize(&mut *self);
        self.path.pop();
        r
    }
}

/// The walk's error: it never happens, but serde needs one.
#[derive(Debug)]
struct Never;

impl fmt::Display for Never {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("secret walk")
    }
}

impl std::error::Error for Never {}

impl ser::Error for Never {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Never
    }
}

/// A map key as text: strings and numbers are kept, anything else is walked for nothing.
struct KeyText(Option<String>);

macro_rules! key_scalars {
    ($($f:ident: $t:ty),*) => {$(
        fn $f(self, v: $t) -> Result<(), Never> {
            self.0 = Some(v.to_string());
            Ok(())
        }
    )*};
}

macro_rules! ignored_scalars {
    ($($f:ident: $t:ty),*) => {$(
        fn $f(self, _: $t) -> Result<(), Never> {
            Ok(())
        }
    )*};
}

impl Serializer for &mut KeyText {
    type Ok = ();
    type Error = Never;
    type SerializeSeq = ser::Impossible<(), Never>;
    type SerializeTuple = ser::Impossible<(), Never>;
    type SerializeTupleStruct = ser::Impossible<(), Never>;
    type SerializeTupleVariant = ser::Impossible<(), Never>;
    type SerializeMap = ser::Impossible<(), Never>;
    type SerializeStruct = ser::Impossible<(), Never>;
    type SerializeStructVariant = ser::Impossible<(), Never>;
    key_scalars!(serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
        serialize_i64: i64, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
        serialize_u64: u64, serialize_f32: f32, serialize_f64: f64, serialize_char: char,
        serialize_str: &str);
    ignored_scalars!(serialize_bytes: &[u8]);
    fn serialize_none(self) -> Result<(), Never> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Never> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Never> {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Never> {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, v: &'static str) -> Result<(), Never> {
        self.0 = Some(v.to_string());
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), Never> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Never> {
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Never> {
        Err(Never)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Never> {
        Err(Never)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Never> {
        Err(Never)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Never> {
        Err(Never)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Never> {
        Err(Never)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Never> {
        Err(Never)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Never> {
        Err(Never)
    }
}

impl<'a> Serializer for &'a mut Walk {
    type Ok = ();
    type Error = Never;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = MapWalk<'a>;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;
    ignored_scalars!(serialize_bool: bool, serialize_i8: i8, serialize_i16: i16,
        serialize_i32: i32, serialize_i64: i64, serialize_u8: u8, serialize_u16: u16,
        serialize_u32: u32, serialize_u64: u64, serialize_f32: f32, serialize_f64: f64,
        serialize_char: char, serialize_bytes: &[u8]);
    fn serialize_str(self, v: &str) -> Result<(), Never> {
        if self.in_secret {
            let path = self.here();
            self.found.push(Found {
                path,
                value: v.to_string(),
            });
        }
        Ok(())
    }
    fn serialize_none(self) -> Result<(), Never> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Never> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Never> {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Never> {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Never> {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> Result<(), Never> {
        let outer = self.in_secret;
        self.in_secret = outer || name == MARK;
        let r = v.serialize(&mut *self);
        self.in_secret = outer;
        r
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        v: &T,
    ) -> Result<(), Never> {
        v.serialize(self)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self, Never> {
        self.index.push(0);
        Ok(self)
    }
    fn serialize_tuple(self, len: usize) -> Result<Self, Never> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Self, Never> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        len: usize,
    ) -> Result<Self, Never> {
        self.serialize_seq(Some(len))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<MapWalk<'a>, Never> {
        Ok(MapWalk {
            walk: self,
            key: None,
        })
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Never> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, Never> {
        Ok(self)
    }
}

impl Walk {
    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Never> {
        let i = self.index.last().copied().unwrap_or(0);
        if let Some(last) = self.index.last_mut() {
            *last += 1;
        }
        self.nested(format!("[{i}]"), v)
    }

    fn end_seq(&mut self) -> Result<(), Never> {
        self.index.pop();
        Ok(())
    }
}

macro_rules! seq_like {
    ($($tr:ident :: $f:ident),*) => {$(
        impl ser::$tr for &mut Walk {
            type Ok = ();
            type Error = Never;
            fn $f<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Never> {
                self.element(v)
            }
            fn end(self) -> Result<(), Never> {
                self.end_seq()
            }
        }
    )*};
}

seq_like!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

macro_rules! struct_like {
    ($($tr:ident),*) => {$(
        impl ser::$tr for &mut Walk {
            type Ok = ();
            type Error = Never;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                v: &T,
            ) -> Result<(), Never> {
                self.nested(key.to_string(), v)
            }
            fn end(self) -> Result<(), Never> {
                Ok(())
            }
        }
    )*};
}

struct_like!(SerializeStruct, SerializeStructVariant);

/// A map being walked: its keys become path parts.
struct MapWalk<'a> {
    walk: &'a mut Walk,
    key: Option<String>,
}

impl ser::SerializeMap for MapWalk<'_> {
    type Ok = ();
    type Error = Never;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Never> {
        let mut text = KeyText(None);
        // A key that is not text (none in the config) is named `?`.
        let _ = key.serialize(&mut text);
        self.key = Some(text.0.unwrap_or_else(|| "?".to_string()));
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Never> {
        let key = self.key.take().unwrap_or_else(|| "?".to_string());
        self.walk.nested(key, v)
    }
    fn end(self) -> Result<(), Never> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[derive(serde::Serialize)]
    struct Inner {
        name: String,
        token: Option<Secret>,
    }

    #[derive(serde::Serialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Kind {
        Bot { bot_token: Secret, chat: String },
    }

    #[derive(serde::Serialize)]
    struct Outer {
        key: Secret,
        plain: String,
        list: Vec<Inner>,
        headers: BTreeMap<String, Secret>,
        kinds: BTreeMap<String, Kind>,
    }

    #[test]
    fn every_secret_is_found_with_its_path_and_nothing_else() {
        let value = Outer {
            key: "k-1".into(),
            plain: "not a secret".into(),
            list: vec![
                Inner {
                    name: "a".into(),
                    token: None,
                },
                Inner {
                    name: "b".into(),
                    token: Some("t-2".into()),
                },
            ],
            headers: [("Authorization".to_string(), Secret::from("Bearer h-3"))].into(),
            kinds: [(
                "tg".to_string(),
                Kind::Bot {
                    bot_token: "b-4".into(),
                    chat: "c".into(),
                },
            )]
            .into(),
        };
        let found: Vec<(String, String)> = secrets_in(&value)
            .into_iter()
            .map(|f| (f.path, f.value))
            .collect();
        let want = [
            ("key", "k-1"),
            ("list[1].token", "t-2"),
            ("headers.Authorization", "Bearer h-3"),
            ("kinds.tg.bot_token", "b-4"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(p, v)| (p.to_string(), v.to_string()))
            .collect();
        assert_eq!(found, want);
    }

    #[test]
    fn a_secret_reads_and_writes_as_a_plain_string_and_never_debug_prints() {
        let s: Secret = serde_json::from_str("\"sk-live-value\"").unwrap();
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"sk-live-value\"");
        assert_eq!(s.expose(), "sk-live-value");
        assert!(!format!("{s:?}").contains("sk-live"));
    }
}
