//! Lines into messages: trimming as the host does, the `-32700`/`-32600` details, and the
//! classification rules of the published SDK, written once for the `Value` path here and the
//! raw path ([`raw`](super::raw)).

use std::fmt;

use serde_json::Value;

use super::*;

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
pub(super) fn quote_utf16(s: &str, max: usize) -> String {
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
pub(super) const BAD_ERROR_OBJECT: &str =
    "error must be an object with a numeric code and a string message";

/// The `jsonrpc` check: `"2.0"` or a `-32700` naming what was there.
pub(super) fn check_version(version: Option<&Value>) -> Result<(), FrameError> {
    match version {
        Some(Value::String(v)) if v == JSONRPC_VERSION => Ok(()),
        Some(other) => Err(FrameError::Parse(ParseErrorDetail::BadVersion(other.to_string()))),
        None => Err(FrameError::Parse(ParseErrorDetail::BadVersion("undefined".into()))),
    }
}

/// The `id` of an object as classification sees it.
pub(super) enum IdShape {
    Absent,
    Null,
    Usable(Id),
    Other,
}

impl IdShape {
    pub(super) fn of(value: Option<Value>) -> IdShape {
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
pub(super) enum MethodShape<S> {
    Absent,
    Str(S),
    Other,
}

/// What classification looks at in a JSON-RPC 2.0 object (its version already checked).
pub(super) struct Shape<S> {
    pub(super) id: IdShape,
    pub(super) has_result: bool,
    pub(super) has_error: bool,
    pub(super) method: MethodShape<S>,
}

/// The kind of a well-formed message, before its payload is taken.
pub(super) enum Class<S> {
    /// A response with this id (`None` for `null`).
    Response(Option<Id>),
    Request(Id, S),
    Notification(S),
}

pub(super) fn invalid_message(id: Option<Id>, detail: &str) -> FrameError {
    FrameError::Invalid(InvalidMessage { id, detail: detail.to_owned() })
}

/// The classification rules of the published SDK, written once for every parse path.
pub(super) fn classify<S>(shape: Shape<S>) -> Result<Class<S>, FrameError> {
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
pub(super) fn response_outcome(
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
}
