//! The provider config: keys, defaults, validation, and the account fingerprint.
//!
//! | Key | Type | Default | Meaning |
//! |---|---|---|---|
//! | `apiKey` | secret string | required | Bearer key of the sandbox API |
//! | `baseUrl` | `https://…` (or `http://…`) URL | required | Where the API lives |
//! | `caFile` | path of a PEM file | none | Extra certificate authorities to trust for `https://`, besides the system's |
//! | `snapshot` | string | none | Snapshot to create sandboxes from |
//! | `ttlMinutes` | positive integer | none | Wall-clock lifetime, sent as `autoDeleteInterval` |
//! | `acquireCapMs` | positive integer | 180,000 | Cap of one fresh acquisition |
//! | `createLookupDelayMs` | positive integer | 90,000 | When a create still not started is looked up by name |
//! | `pollIntervalMs` | positive integer | 1,000 | Delay between state reads |
//! | `requestTimeoutMs` | positive integer | 30,000 | Timeout of one API call (create and exec excepted) |
//! | `stateTimeoutMs` | positive integer | 60,000 | How long start, stop, recover and delete may take to show |
//!
//! The defaults are Daytona's (seed 001, PR #20828). Every duration is configurable so tests
//! run in milliseconds. Unknown keys (the host's `timeoutMs`, …) are ignored, and a key that
//! holds `null` (a field cleared in a form) reads as absent.
//!
//! [`RemoteConfig`] is the driver's typed config (`#[driver(config = RemoteConfig)]`): the SDK
//! parses each call's config into it before a hook runs and answers a config that does not
//! fit with the path and what was expected, never the value (`environmentValidateConfig`:
//! `{ok: false, errors: ["config.ttlMinutes: expected a positive whole number"]}`; other
//! hooks: `-32602`). The field deserializers check what a JSON type cannot say (the
//! `http://` scheme, a non-blank key, the ranges); [`RemoteConfig::check`] checks the one rule
//! across keys (`createLookupDelayMs` below `acquireCapMs`).
//!
//! `https://` goes through rustls and trusts the system's root certificates; `caFile` adds the
//! CAs of a PEM file (a private CA, a test server's). Nothing turns certificate verification
//! off: a server whose certificate no trusted CA signed fails every call with an error naming
//! `config.caFile` (see [`crate::api::http_client`]).

use std::num::NonZeroU64;
use std::time::Duration;

use paperclip_sandbox_sdk::protocol::secret::Secret;
use paperclip_sandbox_sdk::schemars::{self, JsonSchema};
use serde::de::Unexpected;
use serde::{Deserialize, Deserializer};
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

/// A provider config: the account and the timings.
///
/// Its JSON Schema is the driver's `configSchema` (doc comments become the descriptions;
/// `apiKey` is a [`Secret`], so the schema says `"format": "secret-ref"`, and `Debug` never
/// shows it).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(description = "Account and timings of a Daytona-shaped sandbox API.")]
pub struct RemoteConfig {
    /// Bearer key of the sandbox API.
    #[serde(deserialize_with = "api_key")]
    pub api_key: Secret,
    /// https:// (or http://) URL of the sandbox API.
    #[serde(deserialize_with = "base_url")]
    pub base_url: String,
    /// PEM file of extra certificate authorities to trust for an https:// baseUrl, besides the
    /// system's root certificates.
    #[serde(default, deserialize_with = "ca_file")]
    #[schemars(length(min = 1))]
    pub ca_file: Option<String>,
    /// Snapshot to create sandboxes from.
    #[schemars(length(min = 1))]
    pub snapshot: Option<String>,
    /// Wall-clock lifetime of a sandbox in minutes.
    pub ttl_minutes: Option<NonZeroU64>,
    /// Cap of one fresh acquisition, in milliseconds.
    #[serde(default = "default_acquire_cap_ms", deserialize_with = "acquire_cap_ms")]
    #[schemars(range(min = 1, max = MAX_ACQUIRE_CAP_MS))]
    pub acquire_cap_ms: u64,
    /// When a create still not started is looked up by name, in milliseconds (< acquireCapMs).
    #[serde(
        default = "default_create_lookup_delay_ms",
        deserialize_with = "positive::<DEFAULT_CREATE_LOOKUP_DELAY_MS, _>"
    )]
    #[schemars(range(min = 1))]
    pub create_lookup_delay_ms: u64,
    /// Delay between state reads, in milliseconds.
    #[serde(
        default = "default_poll_interval_ms",
        deserialize_with = "positive::<DEFAULT_POLL_INTERVAL_MS, _>"
    )]
    #[schemars(range(min = 1))]
    pub poll_interval_ms: u64,
    /// Timeout of one API call, in milliseconds.
    #[serde(
        default = "default_request_timeout_ms",
        deserialize_with = "positive::<DEFAULT_REQUEST_TIMEOUT_MS, _>"
    )]
    #[schemars(range(min = 1))]
    pub request_timeout_ms: u64,
    /// How long start, stop, recover and delete may take to show, in milliseconds.
    #[serde(
        default = "default_state_timeout_ms",
        deserialize_with = "positive::<DEFAULT_STATE_TIMEOUT_MS, _>"
    )]
    #[schemars(range(min = 1))]
    pub state_timeout_ms: u64,
}

impl RemoteConfig {
    /// What the types do not say: a non-empty `snapshot`, and the rule across keys,
    /// `createLookupDelayMs` below `acquireCapMs`. The error names the path, as the SDK's do.
    pub fn check(&self) -> Result<(), String> {
        if self.snapshot.as_deref() == Some("") {
            return Err("config.snapshot: expected a non-empty string".to_owned());
        }
        if self.create_lookup_delay_ms >= self.acquire_cap_ms {
            return Err("config.createLookupDelayMs: expected less than acquireCapMs".to_owned());
        }
        Ok(())
    }

    /// Cap of one fresh acquisition.
    pub fn acquire_cap(&self) -> Duration {
        Duration::from_millis(self.acquire_cap_ms)
    }

    /// When a create still not started is looked up by its creation name.
    pub fn create_lookup_delay(&self) -> Duration {
        Duration::from_millis(self.create_lookup_delay_ms)
    }

    /// Delay between state reads.
    pub fn poll_interval(&self) -> Duration {
        Duration::from_millis(self.poll_interval_ms)
    }

    /// Timeout of one API call.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }

    /// How long start, stop, recover and delete may take to show.
    pub fn state_timeout(&self) -> Duration {
        Duration::from_millis(self.state_timeout_ms)
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

/// Fails with `expected` (what the key must be) for a value that does not fit; the SDK keeps
/// only that part of the message, never the value.
fn refuse<E: serde::de::Error>(expected: &str) -> E {
    E::invalid_value(Unexpected::Other("a value"), &expected)
}

fn api_key<'de, D: Deserializer<'de>>(d: D) -> Result<Secret, D::Error> {
    let key = Secret::deserialize(d)?;
    if key.expose().trim().is_empty() {
        return Err(refuse("a non-blank key"));
    }
    Ok(key)
}

/// An `https://` or `http://` URL with a host and no credentials; the trailing slash is dropped.
fn base_url<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let url = String::deserialize(d)?;
    let Some(rest) = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://")) else {
        return Err(refuse("an https:// or http:// URL"));
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() || host.contains('@') || rest.contains(char::is_whitespace) {
        return Err(refuse("an https:// or http:// URL with a host and no credentials"));
    }
    Ok(url.trim_end_matches('/').to_owned())
}

/// A non-empty path; `null` reads as absent.
fn ca_file<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    match Option::<String>::deserialize(d) {
        Ok(None) => Ok(None),
        Ok(Some(path)) if !path.trim().is_empty() => Ok(Some(path)),
        _ => Err(refuse("the path of a PEM file")),
    }
}

/// A positive whole number; `null` reads as the key's `DEFAULT`, as an absent key does (a
/// cleared field some hosts store as `null`).
fn positive<'de, const DEFAULT: u64, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    match Option::<u64>::deserialize(d) {
        Ok(None) => Ok(DEFAULT),
        Ok(Some(n)) if n > 0 => Ok(n),
        _ => Err(refuse("a positive whole number")),
    }
}

fn acquire_cap_ms<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    match positive::<DEFAULT_ACQUIRE_CAP_MS, D>(d)? {
        n @ ..=MAX_ACQUIRE_CAP_MS => Ok(n),
        _ => Err(refuse("at most 86400000 (24 hours)")),
    }
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
    use paperclip_sandbox_sdk::config_schema;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> RemoteConfig {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn defaults_are_daytonas() {
        let c = parse(json!({"apiKey": "k", "baseUrl": "http://h:1/api/"}));
        assert_eq!(c.base_url, "http://h:1/api");
        let c = parse(json!({"apiKey": "k", "baseUrl": "https://h/", "caFile": "/etc/ca.pem"}));
        assert_eq!((c.base_url.as_str(), c.ca_file.as_deref()), ("https://h", Some("/etc/ca.pem")));
        assert_eq!(c.acquire_cap(), Duration::from_secs(180));
        assert_eq!(c.create_lookup_delay(), Duration::from_secs(90));
        assert_eq!(c.poll_interval(), Duration::from_secs(1));
        assert_eq!(c.request_timeout(), Duration::from_secs(30));
        assert_eq!(c.state_timeout(), Duration::from_secs(60));
        assert_eq!(c.ttl_minutes, None);
        assert_eq!(c.check(), Ok(()));
        // A key stored as `null` (a cleared field) reads as its default.
        let cleared = parse(json!({"apiKey": "k", "baseUrl": "http://h", "acquireCapMs": null,
            "createLookupDelayMs": null, "pollIntervalMs": null, "requestTimeoutMs": null,
            "stateTimeoutMs": null}));
        assert_eq!(cleared.acquire_cap(), Duration::from_secs(180));
        assert_eq!(cleared.create_lookup_delay(), Duration::from_secs(90));
        assert_eq!(cleared.poll_interval(), Duration::from_secs(1));
        assert_eq!(cleared.request_timeout(), Duration::from_secs(30));
        assert_eq!(cleared.state_timeout(), Duration::from_secs(60));
        let zero = serde_json::from_value::<RemoteConfig>(
            json!({"apiKey": "k", "baseUrl": "http://h", "pollIntervalMs": 0}),
        );
        assert!(zero.unwrap_err().to_string().contains("a positive whole number"));
        let c = parse(json!({"apiKey": "k", "baseUrl": "http://h",
            "createLookupDelayMs": 5, "acquireCapMs": 5}));
        let error = c.check().unwrap_err();
        assert_eq!(error, "config.createLookupDelayMs: expected less than acquireCapMs");
    }

    #[test]
    fn the_schema_has_the_keys_and_the_secret_format() {
        let schema = config_schema::<RemoteConfig>();
        let properties: Vec<&str> =
            schema["properties"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            properties,
            [
                "apiKey",
                "baseUrl",
                "caFile",
                "snapshot",
                "ttlMinutes",
                "acquireCapMs",
                "createLookupDelayMs",
                "pollIntervalMs",
                "requestTimeoutMs",
                "stateTimeoutMs"
            ]
        );
        assert_eq!(schema["required"], json!(["apiKey", "baseUrl"]));
        assert_eq!(schema["properties"]["apiKey"]["format"], json!(Secret::SCHEMA_FORMAT));
        // An unknown key (the host's `timeoutMs`) is ignored.
        parse(json!({"apiKey": "k", "baseUrl": "http://h", "timeoutMs": []}));
    }

    #[test]
    fn fingerprint_is_hex_and_depends_on_both() {
        let a = parse(json!({"apiKey": "k1", "baseUrl": "http://h"}));
        let b = parse(json!({"apiKey": "k2", "baseUrl": "http://h"}));
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
