//! JSON-RPC 2.0 messages as Paperclip uses them (protocol.md A.2).
//!
//! * One message per line (NDJSON); see [`parse_line`] and [`Message::to_line`].
//! * Ids are numbers or strings and round-trip with their exact JSON type ([`Id`]).
//! * A success response always carries `result` (`null` for void methods).
//! * Classification follows the published SDK: a *response* has an `id` key and a `result` or
//!   `error` key; a *request* has a string `method` and a non-null `id`; a *notification* has a
//!   string `method` and no `id` key at all. Anything else is invalid.
//! * Two Paperclip envelope keys ride beside the standard ones: [`Invocation`]
//!   (`paperclipInvocation`, host→worker) and `paperclipInvocationId` (worker→host).

use std::borrow::Cow;
use std::fmt;

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::error_code::ErrorCode;

/// The only JSON-RPC version Paperclip speaks.
pub const JSONRPC_VERSION: &str = "2.0";

/// The envelope key of the host's invocation context on host→worker messages.
pub const INVOCATION_KEY: &str = "paperclipInvocation";

/// The envelope key naming the host invocation a worker→host message belongs to.
pub const INVOCATION_ID_KEY: &str = "paperclipInvocationId";

/// How many characters of a bad line the parse-error message quotes (published SDK).
pub const PARSE_ERROR_QUOTE_LEN: usize = 200;

/// A request id: a JSON number or a JSON string, kept exactly as received.
///
/// The host matches responses by strict equality, so an id must be echoed with its JSON type:
/// numeric `7` is never answered as `"7"`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    /// A numeric id (the host counts up from 1).
    Number(serde_json::Number),
    /// A string id (SDK tests use ids such as `"host-1"`).
    String(String),
}

impl Id {
    /// The id as a JSON value.
    pub fn to_value(&self) -> Value {
        match self {
            Id::Number(n) => Value::Number(n.clone()),
            Id::String(s) => Value::String(s.clone()),
        }
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Invocation {
    /// The invocation id (a UUID); worker→host calls made while serving it carry it as
    /// `paperclipInvocationId`.
    pub id: String,
    /// The company scope.
    pub scope: InvocationScope,
    /// The W3C `traceparent` of the host span, when tracing is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorObject {
    /// The error code; see [`ErrorCode`] for the named ones.
    pub code: i64,
    /// A human-readable message.
    pub message: String,
    /// Typed error data (an allowlisted envelope); never arbitrary provider data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
/// terminators and the Unicode space separators).
fn is_js_whitespace(c: char) -> bool {
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

/// Trims a line as the published SDK does before parsing (`line.trim()`).
pub fn trim_line(line: &str) -> &str {
    line.trim_matches(is_js_whitespace)
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

/// The `jsonrpc` check of protocol.md A.2: `"2.0"` or a `-32700` naming what was there.
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

/// The classification rules of protocol.md A.2, written once for every parse path.
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
    /// Classifies a parsed JSON value exactly as protocol.md A.2 describes.
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

impl Serialize for Request {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("method", &self.method)?;
        if let Some(params) = &self.params {
            map.serialize_entry("params", params)?;
        }
        if let Some(inv) = &self.invocation {
            map.serialize_entry(INVOCATION_KEY, inv)?;
        }
        if let Some(id) = &self.invocation_id {
            map.serialize_entry(INVOCATION_ID_KEY, id)?;
        }
        map.end()
    }
}

impl Serialize for Notification {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        map.serialize_entry("method", &self.method)?;
        if let Some(params) = &self.params {
            map.serialize_entry("params", params)?;
        }
        if let Some(inv) = &self.invocation {
            map.serialize_entry(INVOCATION_KEY, inv)?;
        }
        if let Some(id) = &self.invocation_id {
            map.serialize_entry(INVOCATION_ID_KEY, id)?;
        }
        map.end()
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
    serde_json::from_str::<raw::Validate>(trimmed).map_err(|_| invalid_json())?;
    let fields = match serde_json::from_str::<raw::Top<'_>>(trimmed).map_err(|_| invalid_json())? {
        raw::Top::Object(fields) => fields,
        raw::Top::Array => {
            return Err(FrameError::Parse(ParseErrorDetail::BadVersion("undefined".into())))
        }
        raw::Top::Scalar => return Err(FrameError::Parse(ParseErrorDetail::NotAnObject)),
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
mod raw {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(s: &str) -> Result<Message, FrameError> {
        parse_line(s)
    }

    #[test]
    fn ids_keep_their_json_type() {
        for raw in [
            r#"{"jsonrpc":"2.0","id":7,"method":"health"}"#,
            r#"{"jsonrpc":"2.0","id":"7","method":"health"}"#,
        ] {
            let Message::Request(req) = parse(raw).unwrap() else { panic!("request") };
            let resp = Response::success(req.id.clone(), Value::Null);
            let line = Message::from(resp).to_line();
            let v: Value = serde_json::from_str(&line).unwrap();
            let sent: Value = serde_json::from_str(raw).unwrap();
            assert_eq!(v["id"], sent["id"]);
            assert_eq!(v["result"], Value::Null);
            assert!(v.as_object().unwrap().contains_key("result"));
        }
    }

    #[test]
    fn void_result_is_explicit_null() {
        let line = Message::from(Response::success(1u64.into(), Value::Null)).to_line();
        assert_eq!(line, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}\n");
    }

    #[test]
    fn parse_error_details_match_published_sdk() {
        let cases = [
            ("not json", "Parse error: Invalid JSON: not json"),
            ("42", "Parse error: Message must be a JSON object"),
            ("null", "Parse error: Message must be a JSON object"),
            (
                r#"{"jsonrpc":"1.0","id":1}"#,
                "Parse error: Invalid or missing jsonrpc version (expected \"2.0\", got \"1.0\")",
            ),
            (
                r#"{"id":1}"#,
                "Parse error: Invalid or missing jsonrpc version (expected \"2.0\", got undefined)",
            ),
            (
                "[1,2]",
                "Parse error: Invalid or missing jsonrpc version (expected \"2.0\", got undefined)",
            ),
        ];
        for (line, message) in cases {
            let err = parse(line).unwrap_err();
            let resp = err.to_response();
            assert_eq!(resp.id, None);
            let Outcome::Error(e) = resp.outcome else { panic!() };
            assert_eq!(e.code, -32700);
            assert_eq!(e.message, message, "{line}");
        }
    }

    #[test]
    fn p3_exact_line() {
        let line = Message::from(parse("not json").unwrap_err().to_response()).to_line();
        assert_eq!(line, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error: Invalid JSON: not json\"}}\n");
    }

    #[test]
    fn invalid_json_quote_is_200_utf16_units() {
        let long = format!("x{}", "é".repeat(300));
        let FrameError::Parse(ParseErrorDetail::InvalidJson(q)) = parse(&long).unwrap_err() else {
            panic!()
        };
        assert_eq!(q.encode_utf16().count(), 200);
        let emoji = format!("{}😀", "a".repeat(199));
        let FrameError::Parse(ParseErrorDetail::InvalidJson(q)) = parse(&emoji).unwrap_err() else {
            panic!()
        };
        assert_eq!(q, "a".repeat(199));
    }

    #[test]
    fn classification_follows_a2() {
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","method":"log","params":{}}"#),
            Ok(Message::Notification(_))
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":1,"result":null}"#),
            Ok(Message::Response(_))
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}"#),
            Ok(Message::Response(Response { outcome: Outcome::Error(_), .. }))
        ));
        // P1: no result and no error is not a response.
        assert!(matches!(parse(r#"{"jsonrpc":"2.0","id":1}"#), Err(FrameError::Invalid(_))));
        // id null with a method is neither a request nor a notification.
        let err = parse(r#"{"jsonrpc":"2.0","id":null,"method":"health"}"#).unwrap_err();
        assert!(matches!(err, FrameError::Invalid(InvalidMessage { id: None, .. })));
        // A method that is not a string.
        let err = parse(r#"{"jsonrpc":"2.0","id":"a","method":3}"#).unwrap_err();
        let resp = err.to_response();
        assert_eq!(resp.id, Some(Id::from("a")));
        assert!(matches!(resp.outcome, Outcome::Error(ErrorObject { code: -32600, .. })));
        // Response checked before request, as the SDK does.
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":1,"method":"x","result":1}"#),
            Ok(Message::Response(_))
        ));
    }

    #[test]
    fn invocation_envelope_round_trips() {
        let raw = json!({"jsonrpc":"2.0","id":3,"method":"environmentExecute","params":{"a":1},
            "paperclipInvocation":{"id":"inv-1","scope":{"companyId":"c1"},"traceparent":"00-abc"}});
        let msg = Message::from_value(raw.clone()).unwrap();
        let Message::Request(req) = &msg else { panic!() };
        let inv = req.invocation.as_ref().unwrap();
        assert_eq!(inv.id, "inv-1");
        assert_eq!(inv.scope.company_id, "c1");
        assert_eq!(serde_json::to_value(&msg).unwrap(), raw);
        let note = Notification {
            method: "execute.log".into(),
            params: Some(json!({"stream":"stdout","chunk":"hi"})),
            invocation: None,
            invocation_id: Some("inv-1".into()),
        };
        assert_eq!(
            Message::from(note).to_line(),
            "{\"jsonrpc\":\"2.0\",\"method\":\"execute.log\",\"params\":{\"stream\":\"stdout\",\"chunk\":\"hi\"},\"paperclipInvocationId\":\"inv-1\"}\n"
        );
    }

    #[test]
    fn crlf_and_bom_are_trimmed() {
        assert!(matches!(
            parse("{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\r"),
            Ok(Message::Notification(_))
        ));
        assert!(matches!(
            parse("\u{feff}{\"jsonrpc\":\"2.0\",\"method\":\"x\"}"),
            Ok(Message::Notification(_))
        ));
        assert_eq!(parse("  \r").unwrap_err(), FrameError::Parse(ParseErrorDetail::Empty));
    }
}
