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
//! [`RemoteConfig::parse`] validates a config; the driver's `configSchema` is derived from
//! [`RemoteConfigInput`], which mirrors the keys the parser reads ([`CONFIG_KEYS`]).
//!
//! This build speaks plain HTTP (reqwest without a TLS backend), so `baseUrl` must be an
//! `http://` URL; an `https://` URL is rejected by validation with that reason rather than
//! failing at the first request.

use std::fmt;
use std::time::Duration;

use paperclip_sandbox_sdk::prelude::JsonObject;
use paperclip_sandbox_sdk::protocol::secret::Secret;
use paperclip_sandbox_sdk::schemars::{self, JsonSchema};
use serde::Deserialize;
use serde_json::Value;
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
/// The largest accepted `acquireCapMs`: 24 hours.
pub const MAX_ACQUIRE_CAP_MS: u64 = 86_400_000;

/// The keys [`RemoteConfig::parse`] reads; every other key is ignored. The `configSchema`
/// ([`RemoteConfigInput`]) has exactly these properties.
pub const CONFIG_KEYS: &[&str] = &[
    "apiKey",
    "baseUrl",
    "snapshot",
    "ttlMinutes",
    "acquireCapMs",
    "createLookupDelayMs",
    "pollIntervalMs",
    "requestTimeoutMs",
    "stateTimeoutMs",
];

/// The value of `key`, one of [`CONFIG_KEYS`].
fn field<'a>(config: &'a JsonObject, key: &str) -> Option<&'a Value> {
    debug_assert!(CONFIG_KEYS.contains(&key), "{key} is not in CONFIG_KEYS");
    config.get(key)
}

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
        let api_key = match field(config, "apiKey") {
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
        let base_url = match field(config, "baseUrl").and_then(Value::as_str) {
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
        let snapshot = match field(config, "snapshot") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(_) => {
                errors.push("snapshot must be a non-empty string".to_owned());
                None
            }
        };
        let mut count = |key: &str, default: Option<u64>| match field(config, key) {
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
        if acquire_cap > Duration::from_millis(MAX_ACQUIRE_CAP_MS) {
            errors.push(format!("acquireCapMs must be at most {MAX_ACQUIRE_CAP_MS} (24 hours)"));
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

/// The config as the host stores it: the source of the driver's `configSchema` (doc comments
/// become the descriptions; `apiKey` is a [`Secret`], so the schema says
/// `"format": "secret-ref"`).
///
/// [`RemoteConfig::parse`] stays the validator: it reports every problem without quoting
/// values and checks what a schema cannot say (the `http://` scheme, `createLookupDelayMs`
/// below `acquireCapMs`). This struct mirrors the keys it reads ([`CONFIG_KEYS`]), with their
/// JSON types and defaults.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(description = "Account and timings of a Daytona-shaped sandbox API.")]
pub struct RemoteConfigInput {
    /// Bearer key of the sandbox API.
    pub api_key: Secret,
    /// http:// URL of the sandbox API.
    pub base_url: String,
    /// Snapshot to create sandboxes from.
    #[schemars(length(min = 1))]
    pub snapshot: Option<String>,
    /// Wall-clock lifetime of a sandbox in minutes.
    #[schemars(range(min = 1))]
    pub ttl_minutes: Option<u64>,
    /// Cap of one fresh acquisition, in milliseconds.
    #[serde(default = "default_acquire_cap_ms")]
    #[schemars(range(min = 1, max = MAX_ACQUIRE_CAP_MS))]
    pub acquire_cap_ms: u64,
    /// When a create still not started is looked up by name, in milliseconds (< acquireCapMs).
    #[serde(default = "default_create_lookup_delay_ms")]
    #[schemars(range(min = 1))]
    pub create_lookup_delay_ms: u64,
    /// Delay between state reads, in milliseconds.
    #[serde(default = "default_poll_interval_ms")]
    #[schemars(range(min = 1))]
    pub poll_interval_ms: u64,
    /// Timeout of one API call, in milliseconds.
    #[serde(default = "default_request_timeout_ms")]
    #[schemars(range(min = 1))]
    pub request_timeout_ms: u64,
    /// How long start, stop, recover and delete may take to show, in milliseconds.
    #[serde(default = "default_state_timeout_ms")]
    #[schemars(range(min = 1))]
    pub state_timeout_ms: u64,
}

fn default_acquire_cap_ms() -> u64 {
    DEFAULT_ACQUIRE_CAP_MS
}
fn default_create_lookup_delay_ms() -> u64 {
    DEFAULT_CREATE_LOOKUP_DELAY_MS
}
fn default_poll_interval_ms() -> u64 {
    DEFAULT_POLL_INTERVAL_MS
}
fn default_request_timeout_ms() -> u64 {
    DEFAULT_REQUEST_TIMEOUT_MS
}
fn default_state_timeout_ms() -> u64 {
    DEFAULT_STATE_TIMEOUT_MS
}

#[cfg(test)]
mod tests {
    use super::*;
    use paperclip_sandbox_sdk::manifest::config_schema;
    use serde_json::json;

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
    fn the_schema_has_exactly_the_keys_the_parser_reads() {
        let schema = config_schema::<RemoteConfigInput>();
        let properties: Vec<&str> =
            schema["properties"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(properties, CONFIG_KEYS);
        assert_eq!(schema["required"], json!(["apiKey", "baseUrl"]));
        assert_eq!(schema["properties"]["apiKey"]["format"], json!(Secret::SCHEMA_FORMAT));
        // The parser reads each of them: a value of the wrong type is an error naming the key,
        // while an unknown key is ignored.
        let base = json!({"apiKey": "k", "baseUrl": "http://h"});
        assert!(RemoteConfig::parse(&obj(json!({"apiKey": "k", "baseUrl": "http://h", "x": []})))
            .is_ok());
        for key in CONFIG_KEYS {
            let mut config = obj(base.clone());
            config.insert((*key).to_owned(), json!([]));
            let errors = RemoteConfig::parse(&config).unwrap_err();
            assert!(errors.iter().any(|e| e.starts_with(key)), "{key}: {errors:?}");
        }
    }

    #[test]
    fn the_schema_struct_and_the_parser_agree_on_defaults() {
        let config = obj(json!({"apiKey": "k", "baseUrl": "http://h", "ttlMinutes": 5}));
        let parsed = RemoteConfig::parse(&config).unwrap();
        let input: RemoteConfigInput = serde_json::from_value(Value::Object(config)).unwrap();
        let ms = Duration::from_millis;
        assert_eq!(input.api_key.expose(), parsed.api_key.expose());
        assert_eq!((input.base_url.as_str(), input.snapshot), (parsed.base_url.as_str(), None));
        assert_eq!(input.ttl_minutes, parsed.ttl_minutes);
        assert_eq!(ms(input.acquire_cap_ms), parsed.acquire_cap);
        assert_eq!(ms(input.create_lookup_delay_ms), parsed.create_lookup_delay);
        assert_eq!(ms(input.poll_interval_ms), parsed.poll_interval);
        assert_eq!(ms(input.request_timeout_ms), parsed.request_timeout);
        assert_eq!(ms(input.state_timeout_ms), parsed.state_timeout);
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
