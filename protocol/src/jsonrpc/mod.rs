//! JSON-RPC 2.0 messages as Paperclip uses them.
//!
//! * One message per line (NDJSON); see [`parse_line`] and [`Message::to_line`].
//! * Ids are numbers or strings and round-trip with their exact JSON type ([`Id`]).
//! * A success response always carries `result` (`null` for void methods).
//! * Classification follows the published SDK: a *response* has an `id` key and a `result` or
//!   `error` key; a *request* has a string `method` and a non-null `id`; a *notification* has a
//!   string `method` and no `id` key at all. Anything else is invalid.
//! * Two Paperclip envelope keys ride beside the standard ones: [`Invocation`]
//!   (`paperclipInvocation`, host→worker) and `paperclipInvocationId` (worker→host).

use std::fmt;

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};
use serde_with::skip_serializing_none;

use crate::error_code::ErrorCode;

/// The only JSON-RPC version Paperclip speaks.
pub const JSONRPC_VERSION: &str = "2.0";

/// The envelope key of the host's invocation context on host→worker messages.
pub const INVOCATION_KEY: &str = "paperclipInvocation";

/// The envelope key naming the host invocation a worker→host message belongs to.
pub const INVOCATION_ID_KEY: &str = "paperclipInvocationId";

/// How many characters of a bad line the parse-error message quotes (published SDK).
pub const PARSE_ERROR_QUOTE_LEN: usize = 200;

/// The longest line the host reads from a worker, in UTF-16 code units (the JavaScript length
/// of the line's text). A longer line is dropped unanswered, so the call it answers times out
/// (upstream `plugin-worker-manager`, `MAX_LINE`).
pub const HOST_MAX_LINE_UNITS: usize = 134_217_728;

/// The UTF-16 code units `text` takes inside a JSON string literal as this crate writes it
/// (`serde_json`), quotes not counted: `"`, `\\` and `\n`, `\r`, `\t`, `\b`, `\f` take 2, other
/// control characters 6 (`\u00XX`), any other character its UTF-16 length.
pub use crate::json_text::json_string_units;

/// A request id: a JSON number or a JSON string, kept exactly as received.
///
/// The host matches responses by strict equality, so an id must be echoed with its JSON type:
/// numeric `7` is never answered as `"7"`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum Id {
    /// A numeric id (the host counts up from 1).
    Number(serde_json::Number),
    /// A string id (SDK tests use ids such as `"host-1"`).
    String(String),
    /// A string id kept as its exact JSON text, quotes included, because it holds a lone
    /// surrogate escape (`"a\ud800b"`): valid to JavaScript, not representable in a Rust
    /// string. It is echoed byte for byte, so the host's strict comparison matches
    /// ([`Id::verbatim`]).
    #[serde(skip_deserializing)]
    Verbatim(String),
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Number(n) => n.serialize(serializer),
            Id::String(s) => s.serialize(serializer),
            Id::Verbatim(json) => {
                let raw = serde_json::value::RawValue::from_string(json.clone())
                    .map_err(serde::ser::Error::custom)?;
                raw.serialize(serializer)
            }
        }
    }
}

impl Id {
    /// The id as a JSON value (a [`Id::Verbatim`] id with its lone surrogates as U+FFFD).
    pub fn to_value(&self) -> Value {
        match self {
            Id::Number(n) => Value::Number(n.clone()),
            Id::String(s) => Value::String(s.clone()),
            Id::Verbatim(json) => replace_lone_surrogate_escapes(json)
                .and_then(|fixed| serde_json::from_str(&fixed).ok())
                .unwrap_or_else(|| Value::String(String::new())),
        }
    }

    /// The exact JSON text of a message's top-level `id` when it is a string, read without
    /// decoding it (so lone surrogate escapes survive); `None` when the line is not an object,
    /// has no string `id`, or repeats `id`.
    pub fn verbatim_in_line(line: &str) -> Option<Id> {
        #[derive(Deserialize)]
        struct IdOnly<'a> {
            #[serde(borrow)]
            id: Option<&'a serde_json::value::RawValue>,
        }
        let only: IdOnly<'_> = serde_json::from_str(line).ok()?;
        Id::verbatim(only.id?.get())
    }

    /// A string id from its exact JSON text (`"…"`, escapes as received), when that text is a
    /// JSON string literal; lone surrogate escapes are allowed.
    pub fn verbatim(json: &str) -> Option<Id> {
        let raw: &serde_json::value::RawValue = serde_json::from_str(json).ok()?;
        raw.get().starts_with('"').then(|| Id::Verbatim(raw.get().to_owned()))
    }

    /// Reads an id from a JSON value; `None` for anything but a number or a string.
    pub fn from_value(value: &Value) -> Option<Id> {
        match value {
            Value::Number(n) => Some(Id::Number(n.clone())),
            Value::String(s) => Some(Id::String(s.clone())),
            _ => None,
        }
    }
}

impl From<u64> for Id {
    fn from(n: u64) -> Id {
        Id::Number(n.into())
    }
}

impl From<i64> for Id {
    fn from(n: i64) -> Id {
        Id::Number(n.into())
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Id {
        Id::String(s.to_owned())
    }
}

impl From<String> for Id {
    fn from(s: String) -> Id {
        Id::String(s)
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{}", Value::String(s.clone())),
            Id::Verbatim(json) => f.write_str(json),
        }
    }
}

/// The company scope of a host invocation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvocationScope {
    /// The company the invocation acts for.
    pub company_id: String,
    /// Any further scope keys a newer host sends, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The `paperclipInvocation` object the host attaches to requests and notifications that carry
/// a company (every `environment*` method but `environmentValidateConfig`).
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Invocation {
    /// The invocation id (a UUID); worker→host calls made while serving it carry it as
    /// `paperclipInvocationId`.
    pub id: String,
    /// The company scope.
    pub scope: InvocationScope,
    /// The W3C `traceparent` of the host span, when tracing is on.
    pub traceparent: Option<String>,
    /// Any further keys a newer host sends, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A request: a call that expects a response.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id to echo in the response.
    pub id: Id,
    /// The method name.
    pub method: String,
    /// The params; `None` when the key is absent.
    pub params: Option<Value>,
    /// The host's invocation context (host→worker).
    pub invocation: Option<Invocation>,
    /// The host invocation this call belongs to (worker→host).
    pub invocation_id: Option<String>,
}

/// A notification: a message without an id that gets no response.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method name (`log`, `execute.log`, `onEvent`, …).
    pub method: String,
    /// The params; `None` when the key is absent.
    pub params: Option<Value>,
    /// The host's invocation context (host→worker).
    pub invocation: Option<Invocation>,
    /// The host invocation this notification belongs to (worker→host).
    pub invocation_id: Option<String>,
}

/// A JSON-RPC error object: `{code, message, data?}`. `data` is omitted when absent.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorObject {
    /// The error code; see [`ErrorCode`] for the named ones.
    pub code: i64,
    /// A human-readable message.
    pub message: String,
    /// Typed error data (an allowlisted envelope); never arbitrary provider data.
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error object without data.
    pub fn new(code: impl Into<i64>, message: impl Into<String>) -> Self {
        ErrorObject { code: code.into(), message: message.into(), data: None }
    }

    /// The same error with `data` attached.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `-32700` with the published SDK's wording: `Parse error: <detail>`.
    pub fn parse_error(detail: &ParseErrorDetail) -> Self {
        ErrorObject::new(ErrorCode::ParseError, format!("Parse error: {detail}"))
    }

    /// `-32601 Unknown method: <method>` for a method the worker does not know at all.
    pub fn method_not_found(method: &str) -> Self {
        ErrorObject::new(ErrorCode::MethodNotFound, format!("Unknown method: {method}"))
    }

    /// `-32004 <method> is not implemented by this plugin` for a known method without a hook.
    pub fn method_not_implemented(method: &str) -> Self {
        ErrorObject::new(
            ErrorCode::MethodNotImplemented,
            format!("{method} is not implemented by this plugin"),
        )
    }

    /// `-32602 Invalid params: <detail>`.
    pub fn invalid_params(detail: impl fmt::Display) -> Self {
        ErrorObject::new(ErrorCode::InvalidParams, format!("Invalid params: {detail}"))
    }

    /// `-32600 Invalid request: <detail>`.
    pub fn invalid_request(detail: impl fmt::Display) -> Self {
        ErrorObject::new(ErrorCode::InvalidRequest, format!("Invalid request: {detail}"))
    }

    /// The named code, when the integer is one.
    pub fn error_code(&self) -> Option<ErrorCode> {
        ErrorCode::from_code(self.code)
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

/// What a response carries: a result or an error.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// `result` (`null` for void methods, never absent).
    Result(Value),
    /// `error`.
    Error(ErrorObject),
}

/// A response to a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The echoed id; `None` serializes as `null` (parse errors, invalid requests).
    pub id: Option<Id>,
    /// The result or the error.
    pub outcome: Outcome,
}

impl Response {
    /// A success response; pass `Value::Null` for a void method.
    pub fn success(id: Id, result: Value) -> Self {
        Response { id: Some(id), outcome: Outcome::Result(result) }
    }

    /// An error response.
    pub fn error(id: Option<Id>, error: ErrorObject) -> Self {
        Response { id, outcome: Outcome::Error(error) }
    }
}

/// Any Paperclip JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response.
    Response(Response),
}

impl Message {
    /// Serializes the message as one NDJSON line, `\n` included.
    pub fn to_line(&self) -> String {
        let mut line = serde_json::to_string(self).expect("a message always serializes");
        line.push('\n');
        line
    }
}

/// Writes a request or notification: `jsonrpc`, the `id` of a request, `method`, then the
/// optional `params` and Paperclip envelope keys, in that order.
fn serialize_call<S: Serializer>(
    serializer: S,
    id: Option<&Id>,
    method: &str,
    params: Option<&Value>,
    invocation: Option<&Invocation>,
    invocation_id: Option<&String>,
) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(None)?;
    map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
    if let Some(id) = id {
        map.serialize_entry("id", id)?;
    }
    map.serialize_entry("method", method)?;
    if let Some(params) = params {
        map.serialize_entry("params", params)?;
    }
    if let Some(inv) = invocation {
        map.serialize_entry(INVOCATION_KEY, inv)?;
    }
    if let Some(id) = invocation_id {
        map.serialize_entry(INVOCATION_ID_KEY, id)?;
    }
    map.end()
}

impl Serialize for Request {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize_call(
            serializer,
            Some(&self.id),
            &self.method,
            self.params.as_ref(),
            self.invocation.as_ref(),
            self.invocation_id.as_ref(),
        )
    }
}

impl Serialize for Notification {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize_call(
            serializer,
            None,
            &self.method,
            self.params.as_ref(),
            self.invocation.as_ref(),
            self.invocation_id.as_ref(),
        )
    }
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        map.serialize_entry("id", &self.id)?;
        match &self.outcome {
            Outcome::Result(v) => map.serialize_entry("result", v)?,
            Outcome::Error(e) => map.serialize_entry("error", e)?,
        }
        map.end()
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Message::Request(r) => r.serialize(serializer),
            Message::Notification(n) => n.serialize(serializer),
            Message::Response(r) => r.serialize(serializer),
        }
    }
}

impl From<Request> for Message {
    fn from(r: Request) -> Message {
        Message::Request(r)
    }
}

impl From<Notification> for Message {
    fn from(n: Notification) -> Message {
        Message::Notification(n)
    }
}

impl From<Response> for Message {
    fn from(r: Response) -> Message {
        Message::Response(r)
    }
}

mod parse;
mod raw;
#[cfg(test)]
mod tests;

pub(crate) use parse::is_js_whitespace;
use parse::*;
pub use parse::{
    js_trim, parse_line, replace_lone_surrogate_escapes, trim_line, FrameError, InvalidMessage,
    ParseErrorDetail,
};
pub use raw::*;
