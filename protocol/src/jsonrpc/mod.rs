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

/// Why a line is not a JSON-RPC 2.0 object: the detail of a `-32700` answer, worded as the
/// published SDK words it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorDetail {
    /// The line is empty after trimming (never answered by the worker: blank lines are skipped).
    Empty,
    /// The line is not JSON; carries the first 200 characters of the trimmed line.
    InvalidJson(String),
    /// The line is JSON but not an object (a number, string, boolean or null).
    NotAnObject,
    /// `jsonrpc` is not `"2.0"`; carries the JSON text of the value, or `undefined` when absent
    /// (a JSON array lands here too).
    BadVersion(String),
}

impl fmt::Display for ParseErrorDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseErrorDetail::Empty => f.write_str("Empty message"),
            ParseErrorDetail::InvalidJson(quote) => write!(f, "Invalid JSON: {quote}"),
            ParseErrorDetail::NotAnObject => f.write_str("Message must be a JSON object"),
            ParseErrorDetail::BadVersion(got) => {
                write!(f, "Invalid or missing jsonrpc version (expected \"2.0\", got {got})")
            }
        }
    }
}

/// Why a well-formed JSON-RPC 2.0 object is not a usable message.
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidMessage {
    /// The id to answer with, when the object carried a usable one.
    pub id: Option<Id>,
    /// What is wrong, for the `-32600` message.
    pub detail: String,
}

/// A line that could not be turned into a [`Message`].
#[derive(Debug, Clone, PartialEq)]
pub enum FrameError {
    /// Not a JSON-RPC 2.0 object: answer `-32700` with id `null`.
    Parse(ParseErrorDetail),
    /// A JSON-RPC 2.0 object that is neither a request, a notification nor a response:
    /// answer `-32600`.
    Invalid(InvalidMessage),
}

impl FrameError {
    /// The error response a worker sends for this line.
    pub fn to_response(&self) -> Response {
        match self {
            FrameError::Parse(detail) => Response::error(None, ErrorObject::parse_error(detail)),
            FrameError::Invalid(invalid) => {
                Response::error(invalid.id.clone(), ErrorObject::invalid_request(&invalid.detail))
            }
        }
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Parse(d) => write!(f, "Parse error: {d}"),
            FrameError::Invalid(i) => write!(f, "Invalid request: {}", i.detail),
        }
    }
}

impl std::error::Error for FrameError {}

/// The first `max` UTF-16 code units of `s`, never splitting a character.
fn quote_utf16(s: &str, max: usize) -> String {
    let mut units = 0;
    let mut end = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > max {
            break;
        }
        end = i + c.len_utf8();
    }
    s[..end].to_owned()
}

/// JavaScript's `String.prototype.trim` white space (ASCII white space, NBSP, BOM, line
/// terminators and the Unicode space separators); also JavaScript's regex `\s`.
pub(crate) fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{9}' | '\u{a}' | '\u{b}' | '\u{c}' | '\u{d}' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// Trims a line as the published SDK does before parsing (`line.trim()`): [`js_trim`].
pub fn trim_line(line: &str) -> &str {
    js_trim(line)
}

/// JavaScript's `String.prototype.trim`, which the host applies to the strings it reads (a
/// line, a lease's `remoteCwd`). It differs from [`str::trim`]: it strips U+FEFF and keeps
/// U+0085.
pub fn js_trim(text: &str) -> &str {
    text.trim_matches(is_js_whitespace)
}

/// Rewrites every `\uD800`–`\uDFFF` escape that is not half of a surrogate pair to `\uFFFD`;
/// `None` when there is none.
///
/// `JSON.stringify` writes a lone surrogate of a JavaScript string as such an escape and
/// `JSON.parse` accepts it, but serde_json refuses the whole text. A worker that gets
/// [`ParseErrorDetail::InvalidJson`] for a line should retry with the repaired text (the SDK
/// runtime does), so that a request the published SDK would serve is served rather than
/// answered `-32700` with its id lost. Both parse paths stay exact; the repair is this
/// separate, lossy step.
pub fn replace_lone_surrogate_escapes(text: &str) -> Option<String> {
    fn unit_at(b: &[u8], i: usize) -> Option<u16> {
        if b.get(i) != Some(&b'\\') || b.get(i + 1) != Some(&b'u') {
            return None;
        }
        let hex = std::str::from_utf8(b.get(i + 2..i + 6)?).ok()?;
        u16::from_str_radix(hex, 16).ok()
    }
    let b = text.as_bytes();
    let (mut out, mut copied, mut i) = (String::new(), 0, 0);
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        match unit_at(b, i) {
            Some(0xD800..=0xDBFF) if matches!(unit_at(b, i + 6), Some(0xDC00..=0xDFFF)) => i += 12,
            Some(0xD800..=0xDFFF) => {
                out.push_str(&text[copied..i]);
                out.push_str("\\ufffd");
                i += 6;
                copied = i;
            }
            Some(_) => i += 6,
            // Any other escape is two bytes (`\\` included); a stray one fails the parse anyway.
            None => i += 2,
        }
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// Parses one NDJSON line into a message.
///
/// Blank lines are [`ParseErrorDetail::Empty`]; callers that follow the SDK skip them first.
pub fn parse_line(line: &str) -> Result<Message, FrameError> {
    let trimmed = trim_line(line);
    if trimmed.is_empty() {
        return Err(FrameError::Parse(ParseErrorDetail::Empty));
    }
    let value: Value = serde_json::from_str(trimmed).map_err(|_| {
        FrameError::Parse(ParseErrorDetail::InvalidJson(quote_utf16(
            trimmed,
            PARSE_ERROR_QUOTE_LEN,
        )))
    })?;
    Message::from_value(value)
}

/// The detail of a `-32600` answer to a response whose `error` is not an error object.
const BAD_ERROR_OBJECT: &str = "error must be an object with a numeric code and a string message";

/// The `jsonrpc` check: `"2.0"` or a `-32700` naming what was there.
fn check_version(version: Option<&Value>) -> Result<(), FrameError> {
    match version {
        Some(Value::String(v)) if v == JSONRPC_VERSION => Ok(()),
        Some(other) => Err(FrameError::Parse(ParseErrorDetail::BadVersion(other.to_string()))),
        None => Err(FrameError::Parse(ParseErrorDetail::BadVersion("undefined".into()))),
    }
}

/// The `id` of an object as classification sees it.
enum IdShape {
    Absent,
    Null,
    Usable(Id),
    Other,
}

impl IdShape {
    fn of(value: Option<Value>) -> IdShape {
        match value {
            None => IdShape::Absent,
            Some(Value::Null) => IdShape::Null,
            Some(Value::Number(n)) => IdShape::Usable(Id::Number(n)),
            Some(Value::String(s)) => IdShape::Usable(Id::String(s)),
            Some(_) => IdShape::Other,
        }
    }
}

/// The `method` of an object as classification sees it (`S`: the string, owned or borrowed).
enum MethodShape<S> {
    Absent,
    Str(S),
    Other,
}

/// What classification looks at in a JSON-RPC 2.0 object (its version already checked).
struct Shape<S> {
    id: IdShape,
    has_result: bool,
    has_error: bool,
    method: MethodShape<S>,
}

/// The kind of a well-formed message, before its payload is taken.
enum Class<S> {
    /// A response with this id (`None` for `null`).
    Response(Option<Id>),
    Request(Id, S),
    Notification(S),
}

fn invalid_message(id: Option<Id>, detail: &str) -> FrameError {
    FrameError::Invalid(InvalidMessage { id, detail: detail.to_owned() })
}

/// The classification rules of the published SDK, written once for every parse path.
fn classify<S>(shape: Shape<S>) -> Result<Class<S>, FrameError> {
    let has_id = !matches!(shape.id, IdShape::Absent);
    // Responses first, as the published SDK checks them first.
    if has_id && (shape.has_result || shape.has_error) {
        return match shape.id {
            IdShape::Usable(id) => Ok(Class::Response(Some(id))),
            IdShape::Null => Ok(Class::Response(None)),
            _ => Err(invalid_message(None, "response id must be a number, a string or null")),
        };
    }
    let method = match shape.method {
        MethodShape::Str(m) => m,
        MethodShape::Other | MethodShape::Absent => {
            let usable = match shape.id {
                IdShape::Usable(id) => Some(id),
                _ => None,
            };
            let detail = match shape.method {
                MethodShape::Other => "method must be a string",
                _ => "a request needs a method, a response a result or an error",
            };
            return Err(invalid_message(usable, detail));
        }
    };
    match shape.id {
        IdShape::Absent => Ok(Class::Notification(method)),
        IdShape::Usable(id) => Ok(Class::Request(id, method)),
        IdShape::Null => Err(invalid_message(
            None,
            "a request id must not be null (omit the id for a notification)",
        )),
        IdShape::Other => Err(invalid_message(None, "a request id must be a number or a string")),
    }
}

/// The outcome of a classified response from its `result` and `error` values.
fn response_outcome(
    id: Option<Id>,
    result: Option<Value>,
    error: Option<Value>,
) -> Result<Response, FrameError> {
    // An `error` key that is present and not undefined makes it an error response.
    let outcome = match error {
        Some(err) => match serde_json::from_value::<ErrorObject>(err) {
            Ok(e) => Outcome::Error(e),
            Err(_) => return Err(invalid_message(id, BAD_ERROR_OBJECT)),
        },
        None => Outcome::Result(result.unwrap_or(Value::Null)),
    };
    Ok(Response { id, outcome })
}

impl Message {
    /// Classifies a parsed JSON value exactly as the published SDK does.
    pub fn from_value(value: Value) -> Result<Message, FrameError> {
        let mut obj = match value {
            Value::Object(obj) => obj,
            Value::Array(_) => {
                return Err(FrameError::Parse(ParseErrorDetail::BadVersion("undefined".into())))
            }
            _ => return Err(FrameError::Parse(ParseErrorDetail::NotAnObject)),
        };
        check_version(obj.get("jsonrpc"))?;
        let shape = Shape {
            id: IdShape::of(obj.remove("id")),
            has_result: obj.contains_key("result"),
            has_error: obj.contains_key("error"),
            method: match obj.remove("method") {
                Some(Value::String(m)) => MethodShape::Str(m),
                Some(_) => MethodShape::Other,
                None => MethodShape::Absent,
            },
        };
        let (id, method) = match classify(shape)? {
            Class::Response(id) => {
                return response_outcome(id, obj.remove("result"), obj.remove("error"))
                    .map(Message::Response)
            }
            Class::Request(id, method) => (Some(id), method),
            Class::Notification(method) => (None, method),
        };
        let params = obj.remove("params");
        let invocation =
            obj.remove(INVOCATION_KEY).and_then(|v| serde_json::from_value::<Invocation>(v).ok());
        let invocation_id = match obj.remove(INVOCATION_ID_KEY) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        };
        Ok(match id {
            Some(id) => Message::Request(Request { id, method, params, invocation, invocation_id }),
            None => {
                Message::Notification(Notification { method, params, invocation, invocation_id })
            }
        })
    }

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

mod raw;
#[cfg(test)]
mod tests;

pub use raw::*;
