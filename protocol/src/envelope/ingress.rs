//! Host validation of an `environmentRunnerIngressEndpoint` result:
//! `{kind:"authenticated_websocket", websocketUrl, secretHeaders:[{name,value}], generation}`.
//!
//! The host parses `websocketUrl` with the WHATWG URL parser; this module parses the parts the
//! host checks by hand (scheme, userinfo, host, port, path with dot segments and percent
//! encoding, query, fragment), closely enough to agree on accept and reject.

use serde_json::Value;

/// The host's message for an invalid endpoint (with the final period).
pub const INVALID_ENDPOINT_MESSAGE: &str =
    "Sandbox provider returned an invalid runner ingress endpoint.";
/// The host's message for an invalid secret header (with the final period).
pub const INVALID_SECRET_HEADER_MESSAGE: &str =
    "Sandbox provider returned an invalid runner ingress secret header.";
/// The only accepted `kind`.
pub const AUTHENTICATED_WEBSOCKET: &str = "authenticated_websocket";

/// Which endpoint rule failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EndpointDefect {
    /// The result is not an object (the host fails with a TypeError here).
    NotAnObject,
    /// `websocketUrl` is not a string the URL parser accepts (the host fails with Node's
    /// `Invalid URL` TypeError here, before the other checks).
    UnparseableUrl,
    /// `kind` is not exactly `"authenticated_websocket"`.
    Kind,
    /// The URL scheme is not `wss`.
    Scheme,
    /// The URL has a username or password.
    Credentials,
    /// The URL has a non-empty query.
    Query,
    /// The URL has a non-empty fragment.
    Fragment,
    /// The URL pathname differs from the requested path.
    Path,
    /// `generation` is empty or falsy.
    Generation,
}

/// Why the host rejects an ingress endpoint. `Display` is the host's exact message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IngressRejection {
    /// "Sandbox provider returned an invalid runner ingress endpoint."
    #[error("Sandbox provider returned an invalid runner ingress endpoint.")]
    Endpoint(EndpointDefect),
    /// "Sandbox provider returned an invalid runner ingress secret header."
    #[error("Sandbox provider returned an invalid runner ingress secret header.")]
    SecretHeader {
        /// The position of the bad header; `None` when `secretHeaders` is not an array.
        index: Option<usize>,
    },
}

/// The parts of a URL the host checks.
#[derive(Debug, Clone, PartialEq, Eq)]
struct UrlParts {
    scheme: String,
    has_credentials: bool,
    pathname: String,
    query: String,
    fragment: String,
}

fn is_special(scheme: &str) -> bool {
    matches!(scheme, "http" | "https" | "ws" | "wss" | "ftp")
}

fn percent_encode_path_segment(segment: &str, out: &mut String) {
    for &b in segment.as_bytes() {
        let encode = b <= 0x20
            || b >= 0x7F
            || matches!(b, b'"' | b'#' | b'<' | b'>' | b'?' | b'`' | b'{' | b'}');
        if encode {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(b as char);
        }
    }
}

fn is_single_dot(s: &str) -> bool {
    s == "." || s.eq_ignore_ascii_case("%2e")
}

fn is_double_dot(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    matches!(l.as_str(), ".." | ".%2e" | "%2e." | "%2e%2e")
}

/// The WHATWG pathname of a special URL's path string (slashes and backslashes separate).
fn normalize_path(path: &str) -> String {
    let body = path.strip_prefix(['/', '\\']).unwrap_or(path);
    let raw: Vec<&str> = body.split(['/', '\\']).collect();
    let mut segments: Vec<String> = Vec::new();
    for (i, seg) in raw.iter().enumerate() {
        let last = i + 1 == raw.len();
        if is_double_dot(seg) {
            segments.pop();
            if last {
                segments.push(String::new());
            }
        } else if is_single_dot(seg) {
            if last {
                segments.push(String::new());
            }
        } else {
            let mut encoded = String::new();
            percent_encode_path_segment(seg, &mut encoded);
            segments.push(encoded);
        }
    }
    format!("/{}", segments.join("/"))
}

fn valid_host(host: &str) -> bool {
    if let Some(inner) = host.strip_prefix('[') {
        return inner.strip_suffix(']').is_some_and(|ip| {
            !ip.is_empty() && ip.bytes().all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        });
    }
    !host.is_empty()
        && !host.bytes().any(|b| {
            b <= 0x20
                || b == 0x7F
                || matches!(b, b'#' | b'/' | b':' | b'<' | b'>' | b'?' | b'@' | b'[' | b'\\')
                || matches!(b, b']' | b'^' | b'|' | b'%')
        })
}

/// Parses the parts of an absolute URL the host checks; `None` where the WHATWG parser fails.
fn parse_url(input: &str) -> Option<UrlParts> {
    let trimmed = input.trim_matches(|c: char| c <= ' ');
    let cleaned: String = trimmed.chars().filter(|c| !matches!(c, '\t' | '\n' | '\r')).collect();
    let colon = cleaned.find(':')?;
    let scheme = &cleaned[..colon];
    let mut chars = scheme.chars();
    if !chars.next()?.is_ascii_alphabetic()
        || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return None;
    }
    let scheme = scheme.to_ascii_lowercase();
    let rest = &cleaned[colon + 1..];
    if !is_special(&scheme) {
        // Not a WebSocket URL at all; the host rejects it on the scheme (or fails to parse).
        return Some(UrlParts {
            scheme,
            has_credentials: false,
            pathname: String::new(),
            query: String::new(),
            fragment: String::new(),
        });
    }
    let rest = rest.trim_start_matches(['/', '\\']);
    let authority_end = rest.find(['/', '\\', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let (userinfo, host_port) = match authority.rfind('@') {
        Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
        None => (None, authority),
    };
    let has_credentials = userinfo.is_some_and(|u| {
        u.split_once(':').map_or(!u.is_empty(), |(n, p)| !n.is_empty() || !p.is_empty())
    });
    let (host, port) = match host_port.rfind(':') {
        Some(i) if !host_port[i..].contains(']') => (&host_port[..i], Some(&host_port[i + 1..])),
        _ => (host_port, None),
    };
    if !valid_host(host) {
        return None;
    }
    if let Some(port) = port {
        if !port.bytes().all(|b| b.is_ascii_digit())
            || port.parse::<u32>().map_or(!port.is_empty(), |p| p > 65_535)
        {
            return None;
        }
    }
    let (before_fragment, fragment) = match tail.find('#') {
        Some(i) => (&tail[..i], &tail[i + 1..]),
        None => (tail, ""),
    };
    let (path, query) = match before_fragment.find('?') {
        Some(i) => (&before_fragment[..i], &before_fragment[i + 1..]),
        None => (before_fragment, ""),
    };
    Some(UrlParts {
        scheme,
        has_credentials,
        pathname: normalize_path(path),
        query: query.to_owned(),
        fragment: fragment.to_owned(),
    })
}

/// True for a URL the upstream task schema accepts as a runner connection: it parses, its
/// scheme is `wss`, it has no username or password, and its query and fragment are empty.
pub(crate) fn is_credential_free_wss(url: &str) -> bool {
    parse_url(url).is_some_and(|u| {
        u.scheme == "wss" && !u.has_credentials && u.query.is_empty() && u.fragment.is_empty()
    })
}

/// JavaScript truthiness (`!value` is the host's emptiness test).
fn truthy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

/// True for an HTTP token header name: `^[!#$%&'*+.^_`|~0-9A-Za-z-]+$`.
pub fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(b, b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'.')
                || matches!(b, b'^' | b'_' | b'`' | b'|' | b'~' | b'-')
        })
}

/// The host's validation of an ingress endpoint result for `requested_path`, in the host's
/// order: URL parse, then `kind`, scheme `wss:`, no username/password, no query, no fragment,
/// pathname equal to the path, truthy `generation`; then every secret header (token name,
/// truthy value). An empty `secretHeaders` array passes, as in the host.
///
/// Stricter than the host in one place: a header `name` must be a string (the host's
/// `RegExp.test` would coerce a missing name to `"undefined"` and accept it).
pub fn validate_runner_ingress(
    result: &Value,
    requested_path: &str,
) -> Result<(), IngressRejection> {
    use EndpointDefect as D;
    let endpoint = |d| Err(IngressRejection::Endpoint(d));
    let Some(obj) = result.as_object() else { return endpoint(D::NotAnObject) };
    let Some(url) = obj.get("websocketUrl").and_then(Value::as_str).and_then(parse_url) else {
        return endpoint(D::UnparseableUrl);
    };
    if obj.get("kind").and_then(Value::as_str) != Some(AUTHENTICATED_WEBSOCKET) {
        return endpoint(D::Kind);
    }
    if url.scheme != "wss" {
        return endpoint(D::Scheme);
    }
    if url.has_credentials {
        return endpoint(D::Credentials);
    }
    if !url.query.is_empty() {
        return endpoint(D::Query);
    }
    if !url.fragment.is_empty() {
        return endpoint(D::Fragment);
    }
    if url.pathname != requested_path {
        return endpoint(D::Path);
    }
    if !truthy(obj.get("generation")) {
        return endpoint(D::Generation);
    }
    let Some(headers) = obj.get("secretHeaders").and_then(Value::as_array) else {
        return Err(IngressRejection::SecretHeader { index: None });
    };
    for (index, header) in headers.iter().enumerate() {
        let name_ok = header.get("name").and_then(Value::as_str).is_some_and(is_header_name);
        if !name_ok || !truthy(header.get("value")) {
            return Err(IngressRejection::SecretHeader { index: Some(index) });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(url: &str) -> Result<(), IngressRejection> {
        let result = json!({"kind": AUTHENTICATED_WEBSOCKET, "websocketUrl": url,
                            "secretHeaders": [{"name": "x-token", "value": "t"}], "generation": "1"});
        validate_runner_ingress(&result, "/runner")
    }

    #[test]
    fn whatwg_like_parsing() {
        for ok in [
            "wss://h.example/runner",
            "WSS://h.example:443/runner",
            "wss://h.example/runner?",
            "wss://h.example/runner#",
            "wss://@h.example/runner",
            "wss:h.example/runner",
            "wss://h.example/a/../runner",
            "wss://h.example\\runner",
            " wss://h.example/run\tner ",
            "wss://[::1]:8443/runner",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
        let rejected = [
            ("ws://h.example/runner", EndpointDefect::Scheme),
            ("wss://u@h.example/runner", EndpointDefect::Credentials),
            ("wss://:p@h.example/runner", EndpointDefect::Credentials),
            ("wss://h.example/runner?x", EndpointDefect::Query),
            ("wss://h.example/runner#x", EndpointDefect::Fragment),
            ("wss://h.example/runner/", EndpointDefect::Path),
            ("wss://h.example/r%20unner", EndpointDefect::Path),
            ("wss://h.example", EndpointDefect::Path),
            ("runner", EndpointDefect::UnparseableUrl),
            // Extra slashes are skipped: the host is "runner" and the pathname "/".
            ("wss:///runner", EndpointDefect::Path),
            ("wss://@/runner", EndpointDefect::UnparseableUrl),
            ("wss://h.example:99999/runner", EndpointDefect::UnparseableUrl),
            ("wss://h.example:8x/runner", EndpointDefect::UnparseableUrl),
        ];
        for (url, defect) in rejected {
            assert_eq!(check(url), Err(IngressRejection::Endpoint(defect)), "{url}");
        }
        assert_eq!(normalize_path("/a b/./%2E%2e/c/.."), "/");
        assert_eq!(normalize_path("/a b/é"), "/a%20b/%C3%A9");
    }

    #[test]
    fn headers_and_messages() {
        let base =
            json!({"kind": AUTHENTICATED_WEBSOCKET, "websocketUrl": "wss://h/p", "generation": 2});
        let mut r = base.clone();
        r["secretHeaders"] = json!([]);
        assert_eq!(validate_runner_ingress(&r, "/p"), Ok(()));
        r["secretHeaders"] = json!([{"name": "a", "value": "v"}, {"value": "v"}]);
        let err = validate_runner_ingress(&r, "/p").unwrap_err();
        assert_eq!(err, IngressRejection::SecretHeader { index: Some(1) });
        assert_eq!(err.to_string(), INVALID_SECRET_HEADER_MESSAGE);
        r["secretHeaders"] = json!({});
        assert_eq!(
            validate_runner_ingress(&r, "/p"),
            Err(IngressRejection::SecretHeader { index: None })
        );
        let err = validate_runner_ingress(&json!(null), "/p").unwrap_err();
        assert_eq!(err.to_string(), INVALID_ENDPOINT_MESSAGE);
    }
}
