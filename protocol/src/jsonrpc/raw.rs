//! The allocation-light parse path: [`parse_line_raw`] classifies a line with the same rules as
//! [`parse_line`](super::parse_line) but leaves params as raw JSON text borrowed from the line.

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::*;

/// A host→worker request read by [`parse_line_raw`]: the envelope is decoded, the params
/// are left as raw JSON text borrowed from the line.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RawRequest<'a> {
    /// The id to echo in the response.
    pub id: Id,
    /// The method name (borrowed unless it contained escapes).
    pub method: Cow<'a, str>,
    /// The params as raw JSON; `None` when the key is absent.
    pub params: Option<&'a RawValue>,
    /// The host's invocation context (host→worker).
    pub invocation: Option<Invocation>,
    /// The host invocation this call belongs to (worker→host).
    pub invocation_id: Option<String>,
}

/// A notification read by [`parse_line_raw`], params left raw.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RawNotification<'a> {
    /// The method name (borrowed unless it contained escapes).
    pub method: Cow<'a, str>,
    /// The params as raw JSON; `None` when the key is absent.
    pub params: Option<&'a RawValue>,
    /// The host's invocation context (host→worker).
    pub invocation: Option<Invocation>,
    /// The host invocation this notification belongs to (worker→host).
    pub invocation_id: Option<String>,
}

/// A message read by [`parse_line_raw`]. Responses (answers to worker→host calls) are
/// decoded in full.
#[derive(Debug, Clone)]
pub enum RawMessage<'a> {
    /// A request.
    Request(RawRequest<'a>),
    /// A notification.
    Notification(RawNotification<'a>),
    /// A response.
    Response(Response),
}

/// A raw value of a line [`parse_line_raw`] accepted, as a [`Value`]. That line was checked to
/// parse as a `Value`, so this cannot fail; `null` stands in should it ever.
pub fn raw_to_value(raw: &RawValue) -> Value {
    serde_json::from_str(raw.get()).unwrap_or(Value::Null)
}

impl RawRequest<'_> {
    /// The same request with its params parsed: what [`parse_line`] returns for the line.
    pub fn into_request(self) -> Request {
        Request {
            id: self.id,
            method: self.method.into_owned(),
            params: self.params.map(raw_to_value),
            invocation: self.invocation,
            invocation_id: self.invocation_id,
        }
    }
}

impl RawNotification<'_> {
    /// The same notification with its params parsed: what [`parse_line`] returns for the line.
    pub fn into_notification(self) -> Notification {
        Notification {
            method: self.method.into_owned(),
            params: self.params.map(raw_to_value),
            invocation: self.invocation,
            invocation_id: self.invocation_id,
        }
    }
}

impl RawMessage<'_> {
    /// The same message with its params parsed: exactly what [`parse_line`] returns.
    pub fn into_message(self) -> Message {
        match self {
            RawMessage::Request(r) => Message::Request(r.into_request()),
            RawMessage::Notification(n) => Message::Notification(n.into_notification()),
            RawMessage::Response(r) => Message::Response(r),
        }
    }
}

/// The JSON string a raw value holds, borrowed when it has no escapes; `None` when the value
/// is not a string.
fn raw_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(text).ok().map(Cow::Owned)
}

/// Parses one NDJSON line like [`parse_line`], without building a [`Value`] tree of the
/// message: the same classification (the rules are shared), the same errors, and
/// `parse_line_raw(l).map(RawMessage::into_message) == parse_line(l)` for every line.
///
/// The line is read twice: once to check that it is JSON exactly as [`parse_line`] would accept
/// it (number range, string escapes, nesting depth; nothing is allocated), then to pick out the
/// envelope keys, leaving `params` as raw text for the caller to deserialize straight into its
/// own types. Responses are decoded in full.
pub fn parse_line_raw(line: &str) -> Result<RawMessage<'_>, FrameError> {
    let trimmed = trim_line(line);
    if trimmed.is_empty() {
        return Err(FrameError::Parse(ParseErrorDetail::Empty));
    }
    let invalid_json = || {
        FrameError::Parse(ParseErrorDetail::InvalidJson(quote_utf16(
            trimmed,
            PARSE_ERROR_QUOTE_LEN,
        )))
    };
    serde_json::from_str::<scan::Validate>(trimmed).map_err(|_| invalid_json())?;
    let fields = match serde_json::from_str::<scan::Top<'_>>(trimmed).map_err(|_| invalid_json())? {
        scan::Top::Object(fields) => fields,
        scan::Top::Array => {
            return Err(FrameError::Parse(ParseErrorDetail::BadVersion("undefined".into())))
        }
        scan::Top::Scalar => return Err(FrameError::Parse(ParseErrorDetail::NotAnObject)),
    };
    match fields.jsonrpc {
        Some(v) if v.get() == "\"2.0\"" => {}
        other => check_version(other.map(raw_to_value).as_ref())?,
    }
    let shape = Shape {
        id: match fields.id {
            None => IdShape::Absent,
            Some(raw) => match raw.get().as_bytes().first() {
                Some(b'"' | b'-' | b'0'..=b'9' | b'n') => IdShape::of(Some(raw_to_value(raw))),
                _ => IdShape::Other,
            },
        },
        has_result: fields.result.is_some(),
        has_error: fields.error.is_some(),
        method: match fields.method {
            None => MethodShape::Absent,
            Some(raw) => raw_str(raw).map_or(MethodShape::Other, MethodShape::Str),
        },
    };
    let (id, method) = match classify(shape)? {
        Class::Response(id) => {
            let result = fields.result.map(raw_to_value);
            return response_outcome(id, result, fields.error.map(raw_to_value))
                .map(RawMessage::Response);
        }
        Class::Request(id, method) => (Some(id), method),
        Class::Notification(method) => (None, method),
    };
    let params = fields.params;
    let invocation = fields.invocation.and_then(parse_invocation);
    let invocation_id = fields.invocation_id.and_then(raw_str).map(Cow::into_owned);
    Ok(match id {
        Some(id) => {
            RawMessage::Request(RawRequest { id, method, params, invocation, invocation_id })
        }
        None => {
            RawMessage::Notification(RawNotification { method, params, invocation, invocation_id })
        }
    })
}

/// `paperclipInvocation` from raw text, with exactly the outcome of the [`Value`] path: read
/// directly, and through a `Value` when that fails (a duplicate key is an error to the direct
/// reader but not to a `Value`).
fn parse_invocation(raw: &RawValue) -> Option<Invocation> {
    serde_json::from_str::<Invocation>(raw.get())
        .ok()
        .or_else(|| serde_json::from_value::<Invocation>(raw_to_value(raw)).ok())
}

/// The two passes of [`parse_line_raw`].
mod scan {
    use std::fmt;

    use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
    use serde_json::value::RawValue;

    /// Accepts exactly the JSON a [`serde_json::Value`] accepts (it walks every token the same
    /// way) and keeps nothing.
    pub(super) struct Validate;

    impl<'de> Deserialize<'de> for Validate {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(ValidateVisitor)
        }
    }

    struct ValidateVisitor;

    impl<'de> Visitor<'de> for ValidateVisitor {
        type Value = Validate;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<Validate, E> {
            Ok(Validate)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Validate, E> {
            Ok(Validate)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Validate, E> {
            Ok(Validate)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Validate, E> {
            Ok(Validate)
        }
        fn visit_str<E>(self, _: &str) -> Result<Validate, E> {
            Ok(Validate)
        }
        fn visit_unit<E>(self) -> Result<Validate, E> {
            Ok(Validate)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Validate, A::Error> {
            while seq.next_element::<Validate>()?.is_some() {}
            Ok(Validate)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Validate, A::Error> {
            while map.next_key::<Validate>()?.is_some() {
                map.next_value::<Validate>()?;
            }
            Ok(Validate)
        }
    }

    /// The envelope keys of an object, each the raw text of its last occurrence (as a `Value`
    /// keeps the last of duplicate keys).
    #[derive(Default)]
    pub(super) struct Fields<'a> {
        pub jsonrpc: Option<&'a RawValue>,
        pub id: Option<&'a RawValue>,
        pub method: Option<&'a RawValue>,
        pub params: Option<&'a RawValue>,
        pub result: Option<&'a RawValue>,
        pub error: Option<&'a RawValue>,
        pub invocation: Option<&'a RawValue>,
        pub invocation_id: Option<&'a RawValue>,
    }

    /// What a line holds at the top.
    pub(super) enum Top<'a> {
        Object(Fields<'a>),
        Array,
        Scalar,
    }

    impl<'de> Deserialize<'de> for Top<'de> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(TopVisitor)
        }
    }

    struct TopVisitor;

    impl<'de> Visitor<'de> for TopVisitor {
        type Value = Top<'de>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<Top<'de>, E> {
            Ok(Top::Scalar)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Top<'de>, E> {
            Ok(Top::Scalar)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Top<'de>, E> {
            Ok(Top::Scalar)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Top<'de>, E> {
            Ok(Top::Scalar)
        }
        fn visit_str<E>(self, _: &str) -> Result<Top<'de>, E> {
            Ok(Top::Scalar)
        }
        fn visit_unit<E>(self) -> Result<Top<'de>, E> {
            Ok(Top::Scalar)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Top<'de>, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Top::Array)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top<'de>, A::Error> {
            let mut f = Fields::default();
            while let Some(key) = map.next_key::<Key>()? {
                let slot = match key {
                    Key::Jsonrpc => &mut f.jsonrpc,
                    Key::Id => &mut f.id,
                    Key::Method => &mut f.method,
                    Key::Params => &mut f.params,
                    Key::Result => &mut f.result,
                    Key::Error => &mut f.error,
                    Key::Invocation => &mut f.invocation,
                    Key::InvocationId => &mut f.invocation_id,
                    Key::Other => {
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    }
                };
                *slot = Some(map.next_value::<&'de RawValue>()?);
            }
            Ok(Top::Object(f))
        }
    }

    enum Key {
        Jsonrpc,
        Id,
        Method,
        Params,
        Result,
        Error,
        Invocation,
        InvocationId,
        Other,
    }

    impl<'de> Deserialize<'de> for Key {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_identifier(KeyVisitor)
        }
    }

    struct KeyVisitor;

    impl Visitor<'_> for KeyVisitor {
        type Value = Key;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object key")
        }
        fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
            Ok(match key {
                "jsonrpc" => Key::Jsonrpc,
                "id" => Key::Id,
                "method" => Key::Method,
                "params" => Key::Params,
                "result" => Key::Result,
                "error" => Key::Error,
                super::INVOCATION_KEY => Key::Invocation,
                super::INVOCATION_ID_KEY => Key::InvocationId,
                _ => Key::Other,
            })
        }
    }
}
