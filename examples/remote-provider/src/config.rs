//! The provider config: keys, defaults, validation, and the account fingerprint.
//!
//! | Key | Type | Default | Meaning |
//! |---|---|---|---|
//! | `apiKey` | secret string | required | Bearer key of the sandbox API |
//! | `baseUrl` | `http://…` URL | required | Where the API lives |
//! | `snapshot` | string | none | Snapshot to create sandboxes from |
//! | `ttlMinutes` | positive integer | none | Wall-clock lifetime, sent as `autoDeleteInterval` |
//! | `acquireCapMs` | positive integer | 180,000 | Cap of one fresh acquisition |
//! | `createLookupDelayMs` | positive integer | 90,000 | When a create still not started is looked up by name |
//! | `pollIntervalMs` | positive integer | 1,000 | Delay between state reads |
//! | `requestTimeoutMs` | positive integer | 30,000 | Timeout of one API call (create and exec excepted) |
//! | `stateTimeoutMs` | positive integer | 60,000 | How long start, stop, recover and delete may take to show |
//!
//! The defaults are Daytona's (seed 001, PR #20828). Every duration is configurable so tests
//! run in milliseconds. Unknown keys (the host's `timeoutMs`, …) are ignored.
//!
//! This build speaks plain HTTP (reqwest without a TLS backend), so `baseUrl` must be an
//! `http://` URL; an `https://` URL is rejected by validation with that reason rather than
//! failing at the first request.

use std::fmt;
use std::time::Duration;

use paperclip_sandbox_sdk::prelude::JsonObject;
use paperclip_sandbox_sdk::protocol::secret::Secret;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// Default cap of one fresh acquisition (Daytona: 180 s).
pub const DEFAULT_ACQUIRE_CAP_MS: u64 = 180_000;
/// Default delay before a create that has not started is looked up by name (Daytona: 90 s).
pub const DEFAULT_CREATE_LOOKUP_DELAY_MS: u64 = 90_000;
/// Default delay between state reads.
pub const DEFAULT_POLL_INTERVAL_MS: u64 = 1_000;
/// Default timeout of one API call.
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 30_000;
/// Default time a start, stop, recover or delete may take to show.
pub const DEFAULT_STATE_TIMEOUT_MS: u64 = 60_000;

/// A validated provider config.
#[derive(Clone)]
pub struct RemoteConfig {
    /// The API key (never printed).
    pub api_key: Secret,
    /// The API base URL, without a trailing slash.
    pub base_url: String,
    /// The snapshot to create from.
    pub snapshot: Option<String>,
    /// Wall-clock lifetime in minutes.
    pub ttl_minutes: Option<u64>,
    /// Cap of one fresh acquisition.
    pub acquire_cap: Duration,
    /// When a create still not started is looked up by its creation name.
    pub create_lookup_delay: Duration,
    /// Delay between state reads.
    pub poll_interval: Duration,
    /// Timeout of one API call.
    pub request_timeout: Duration,
    /// How long start, stop, recover and delete may take to show.
    pub state_timeout: Duration,
}

impl fmt::Debug for RemoteConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteConfig")
            .field("api_key", &self.api_key)
            .field("base_url", &self.base_url)
            .field("snapshot", &self.snapshot)
            .field("ttl_minutes", &self.ttl_minutes)
            .field("acquire_cap", &self.acquire_cap)
            .field("create_lookup_delay", &self.create_lookup_delay)
            .field("poll_interval", &self.poll_interval)
            .field("request_timeout", &self.request_timeout)
            .field("state_timeout", &self.state_timeout)
            .finish()
    }
}

impl RemoteConfig {
    /// Reads and validates `config`; every problem is reported (values are never echoed).
    pub fn parse(config: &JsonObject) -> Result<Self, Vec<String>> {
        let mut errors = Vec::new();
        let api_key = match config.get("apiKey") {
            Some(Value::String(k)) if !k.trim().is_empty() => Some(Secret::new(k.clone())),
            Some(Value::String(_)) | None | Some(Value::Null) => {
                errors.push("apiKey is required".to_owned());
                None
            }
            Some(_) => {
                errors.push("apiKey must be a string".to_owned());
                None
            }
        };
        let base_url = match config.get("baseUrl").and_then(Value::as_str) {
            Some(url) => match check_base_url(url) {
                Ok(()) => Some(url.trim_end_matches('/').to_owned()),
                Err(e) => {
                    errors.push(e);
                    None
                }
            },
            None => {
                errors.push("baseUrl is required: the http:// URL of the sandbox API".to_owned());
                None
            }
        };
        let snapshot = match config.get("snapshot") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(_) => {
                errors.push("snapshot must be a non-empty string".to_owned());
                None
            }
        };
        let mut count = |key: &str, default: Option<u64>| match config.get(key) {
            None | Some(Value::Null) => default,
            Some(v) => match v.as_u64().filter(|n| *n > 0) {
                Some(n) => Some(n),
                None => {
                    errors.push(format!("{key} must be a positive whole number"));
                    default
                }
            },
        };
        let ttl_minutes = count("ttlMinutes", None);
        let ms = |n: Option<u64>| Duration::from_millis(n.unwrap_or(1));
        let acquire_cap = ms(count("acquireCapMs", Some(DEFAULT_ACQUIRE_CAP_MS)));
        let create_lookup_delay =
            ms(count("createLookupDelayMs", Some(DEFAULT_CREATE_LOOKUP_DELAY_MS)));
        let poll_interval = ms(count("pollIntervalMs", Some(DEFAULT_POLL_INTERVAL_MS)));
        let request_timeout = ms(count("requestTimeoutMs", Some(DEFAULT_REQUEST_TIMEOUT_MS)));
        let state_timeout = ms(count("stateTimeoutMs", Some(DEFAULT_STATE_TIMEOUT_MS)));
        if create_lookup_delay >= acquire_cap {
            errors.push("createLookupDelayMs must be less than acquireCapMs".to_owned());
        }
        if acquire_cap.as_millis() > 86_400_000 {
            errors.push("acquireCapMs must be at most 86400000 (24 hours)".to_owned());
        }
        match (api_key, base_url) {
            (Some(api_key), Some(base_url)) if errors.is_empty() => Ok(RemoteConfig {
                api_key,
                base_url,
                snapshot,
                ttl_minutes,
                acquire_cap,
                create_lookup_delay,
                poll_interval,
                request_timeout,
                state_timeout,
            }),
            _ => Err(errors),
        }
    }

    /// A non-secret fingerprint of the account: the SHA-256 (64 lowercase hex digits) of the
    /// base URL and the API key. Equal fingerprints mean the same credentials; the key cannot
    /// be recovered from it.
    pub fn account_fingerprint(&self) -> String {
        let mut hash = Sha256::new();
        hash.update(b"paperclip-remote-provider/account/v1\n");
        hash.update(self.base_url.as_bytes());
        hash.update(b"\n");
        hash.update(self.api_key.expose().as_bytes());
        hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

fn check_base_url(url: &str) -> Result<(), String> {
    let rest = if let Some(rest) = url.strip_prefix("http://") {
        rest
    } else if url.starts_with("https://") {
        return Err("baseUrl must be an http:// URL: this build of remote-provider has no TLS \
                    backend"
            .to_owned());
    } else {
        return Err("baseUrl must be an http:// URL".to_owned());
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() || host.contains('@') || rest.contains(char::is_whitespace) {
        return Err("baseUrl must be an http:// URL with a host and no credentials".to_owned());
    }
    Ok(())
}

/// The driver's `configSchema` (JSON Schema; `apiKey` is a secret reference).
pub fn config_schema() -> Value {
    let ms = |default: u64, what: &str| json!({"type": "integer", "minimum": 1, "default": default, "description": what});
    json!({
        "type": "object",
        "required": ["apiKey", "baseUrl"],
        "properties": {
            "apiKey": {"type": "string", "format": Secret::SCHEMA_FORMAT,
                       "description": "Bearer key of the sandbox API"},
            "baseUrl": {"type": "string", "description": "http:// URL of the sandbox API"},
            "snapshot": {"type": "string", "description": "Snapshot to create sandboxes from"},
            "ttlMinutes": {"type": "integer", "minimum": 1,
                           "description": "Wall-clock lifetime of a sandbox in minutes"},
            "acquireCapMs": ms(DEFAULT_ACQUIRE_CAP_MS, "Cap of one fresh acquisition"),
            "createLookupDelayMs": ms(DEFAULT_CREATE_LOOKUP_DELAY_MS,
                "When a create still not started is looked up by its creation name"),
            "pollIntervalMs": ms(DEFAULT_POLL_INTERVAL_MS, "Delay between state reads"),
            "requestTimeoutMs": ms(DEFAULT_REQUEST_TIMEOUT_MS, "Timeout of one API call"),
            "stateTimeoutMs": ms(DEFAULT_STATE_TIMEOUT_MS,
                "How long start, stop, recover and delete may take to show"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> JsonObject {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn defaults_are_daytonas() {
        let c = RemoteConfig::parse(&obj(json!({"apiKey": "k", "baseUrl": "http://h:1/api/"})))
            .unwrap();
        assert_eq!(c.base_url, "http://h:1/api");
        assert_eq!(c.acquire_cap, Duration::from_secs(180));
        assert_eq!(c.create_lookup_delay, Duration::from_secs(90));
        assert_eq!(c.ttl_minutes, None);
    }

    #[test]
    fn every_problem_is_reported_without_values() {
        let errors = RemoteConfig::parse(&obj(json!({
            "apiKey": "", "baseUrl": "ftp://sk-secret@h", "acquireCapMs": 0,
            "pollIntervalMs": 1.5, "ttlMinutes": -3,
        })))
        .unwrap_err();
        assert_eq!(errors.len(), 5, "{errors:?}");
        assert!(errors.iter().all(|e| !e.contains("sk-secret")));
        let errors = RemoteConfig::parse(&obj(json!({"apiKey": "k", "baseUrl": "https://h",
            "createLookupDelayMs": 5, "acquireCapMs": 5})))
        .unwrap_err();
        assert_eq!(errors.len(), 2, "{errors:?}");
    }

    #[test]
    fn fingerprint_is_hex_and_depends_on_both() {
        let a = RemoteConfig::parse(&obj(json!({"apiKey": "k1", "baseUrl": "http://h"}))).unwrap();
        let b = RemoteConfig::parse(&obj(json!({"apiKey": "k2", "baseUrl": "http://h"}))).unwrap();
        let fa = a.account_fingerprint();
        assert_eq!(fa.len(), 64);
        assert!(fa.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)));
        assert_ne!(fa, b.account_fingerprint());
        assert!(!format!("{a:?}").contains("k1"));
    }

    #[test]
    fn sha256_matches_a_known_vector() {
        let digest: String = Sha256::digest(b"abc").iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(digest, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
