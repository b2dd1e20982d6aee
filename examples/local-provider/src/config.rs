//! The provider config: `root` and `syncTimeoutMs`.
//!
//! | Key | Type | Default |
//! |---|---|---|
//! | `root` | absolute path of the directory holding the lease directories | env `LOCAL_PROVIDER_ROOT`, else `$XDG_RUNTIME_DIR/paperclip-local-provider`, else `$TMPDIR/paperclip-local-provider-<uid>` |
//! | `syncTimeoutMs` | whole number from 1 to [`MAX_SYNC_TIMEOUT_MS`], the transfer timeout of a sync call | [`DEFAULT_SYNC_TIMEOUT_MS`] (5 minutes) |
//!
//! A key that holds `null` (a field cleared in a form) reads as absent.
//!
//! [`LocalConfig`] is the driver's typed config (`#[driver(config = LocalConfig)]`): the SDK
//! parses each call's config into it before a hook runs, and answers a config that does not
//! fit with the path and what was expected, never the value (`environmentValidateConfig`:
//! `{ok: false, errors: ["config.root: expected an absolute path"]}`; other hooks: `-32602`).
//! The two keys are newtypes ([`LeaseRoot`], [`SyncTimeoutMs`]) whose deserializers check the
//! form and whose schemas are the `configSchema` entries, so the bwrap provider reuses them.
//!
//! Other keys (the host may add some, such as `timeoutMs`) are accepted and kept in
//! [`LocalConfig::other`], so the normalized config keeps them.

use std::path::{Path, PathBuf};

use paperclip_sandbox_protocol::methods::lease::JsonObject;
use paperclip_sandbox_sdk::schemars::{self, JsonSchema};
use serde::de::{Error as _, Unexpected};
use serde::{Deserialize, Deserializer, Serialize};

/// The default sync transfer timeout: 300,000 ms.
pub const DEFAULT_SYNC_TIMEOUT_MS: u64 = 300_000;

/// The largest accepted `syncTimeoutMs`: the host's own call-timeout clamp (2^31 − 1 ms).
pub const MAX_SYNC_TIMEOUT_MS: u64 = 2_147_483_647;

/// The environment variable naming the default root.
pub const ROOT_ENV: &str = "LOCAL_PROVIDER_ROOT";

/// Where the local provider keeps lease directories and how long a native sync may take.
//
// Its JSON Schema (schemars, through the SDK's re-export) is the driver's `configSchema`: the
// doc comments are the descriptions the host shows.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalConfig {
    /// Absolute directory holding the lease directories, private to the worker's user (default: $LOCAL_PROVIDER_ROOT, else $XDG_RUNTIME_DIR/paperclip-local-provider, else $TMPDIR/paperclip-local-provider-$UID).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<LeaseRoot>,
    /// Transfer timeout of a native sync call, in milliseconds.
    #[serde(default)]
    pub sync_timeout_ms: SyncTimeoutMs,
    /// Keys the provider does not read (the host's `timeoutMs`, …), kept for the normalized
    /// config.
    #[serde(flatten)]
    #[schemars(skip)]
    pub other: JsonObject,
}

/// The config a [`LocalDriver`](crate::provider::LocalDriver) runs with: the local provider's
/// own [`LocalConfig`], or the config of a provider wrapping it (the bwrap provider's adds a
/// key), holding `root` and `syncTimeoutMs`.
pub trait LocalSettings:
    Serialize + serde::de::DeserializeOwned + Send + Sync + std::fmt::Debug + 'static
{
    /// What a wrapping provider's config adds that its own hooks read (the bwrap provider's
    /// `bwrap` key); `()` for [`LocalConfig`]. It is resolved with the rest of the config into
    /// the per-config [`LocalBackend`](crate::provider::LocalBackend), where those hooks find it.
    type Extra: Clone + Send + Sync + std::fmt::Debug + 'static;

    /// The [`Extra`](Self::Extra) part of this config.
    fn extra(&self) -> Self::Extra;

    /// The `root` key.
    fn root(&self) -> Option<&LeaseRoot>;

    /// The `syncTimeoutMs` key.
    fn sync_timeout_ms(&self) -> SyncTimeoutMs;

    /// The directory holding the lease directories: `root`, else `$LOCAL_PROVIDER_ROOT`, else
    /// the user's private default ([`default_root`](paperclip_sandbox_sdk::private_dir::default_root):
    /// `$XDG_RUNTIME_DIR/paperclip-local-provider`, else
    /// `$TMPDIR/paperclip-local-provider-<uid>`).
    fn resolved_root(&self) -> PathBuf {
        if let Some(root) = self.root() {
            return root.0.clone();
        }
        match std::env::var_os(ROOT_ENV) {
            Some(r) if !r.is_empty() => PathBuf::from(r),
            _ => paperclip_sandbox_sdk::private_dir::default_root("paperclip-local-provider"),
        }
    }
}

impl LocalSettings for LocalConfig {
    type Extra = ();

    fn extra(&self) {}

    fn root(&self) -> Option<&LeaseRoot> {
        self.root.as_ref()
    }

    fn sync_timeout_ms(&self) -> SyncTimeoutMs {
        self.sync_timeout_ms
    }
}

/// The `root` key: an absolute path (`config.root: expected an absolute path` otherwise).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(transparent, inline, title = "Lease root")]
pub struct LeaseRoot(PathBuf);

impl LeaseRoot {
    /// The path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl<'de> Deserialize<'de> for LeaseRoot {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let path = String::deserialize(d)?;
        if !path.starts_with('/') {
            return Err(D::Error::invalid_value(Unexpected::Other("a path"), &"an absolute path"));
        }
        Ok(Self(path.into()))
    }
}

/// The `syncTimeoutMs` key: a whole number of milliseconds from 1 to [`MAX_SYNC_TIMEOUT_MS`],
/// [`DEFAULT_SYNC_TIMEOUT_MS`] when absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(transparent, inline)]
pub struct SyncTimeoutMs(#[schemars(range(min = 1, max = MAX_SYNC_TIMEOUT_MS))] u64);

impl SyncTimeoutMs {
    /// The timeout in milliseconds.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl Default for SyncTimeoutMs {
    fn default() -> Self {
        Self(DEFAULT_SYNC_TIMEOUT_MS)
    }
}

impl<'de> Deserialize<'de> for SyncTimeoutMs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // `null` reads as the default, as an absent key does (a cleared field some hosts
        // store as `null`). The refusal names the rule, never the value.
        match Option::<u64>::deserialize(d)? {
            None => Ok(Self::default()),
            Some(n @ 1..=MAX_SYNC_TIMEOUT_MS) => Ok(Self(n)),
            Some(_) => Err(D::Error::invalid_value(
                Unexpected::Other("a number out of range"),
                &"a whole number from 1 to 2147483647",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paperclip_sandbox_sdk::config_schema;
    use serde_json::json;

    fn parse(config: serde_json::Value) -> LocalConfig {
        serde_json::from_value(config).unwrap()
    }

    #[test]
    fn accepts_defaults_and_valid_values_and_keeps_other_keys() {
        assert_eq!(parse(json!({})), LocalConfig::default());
        assert_eq!(parse(json!({})).sync_timeout_ms.get(), DEFAULT_SYNC_TIMEOUT_MS);
        let cleared = parse(json!({"syncTimeoutMs": null}));
        assert_eq!(cleared.sync_timeout_ms.get(), DEFAULT_SYNC_TIMEOUT_MS, "null is the default");
        let c = parse(json!({"root": "/srv/leases", "syncTimeoutMs": 5000, "timeoutMs": 1}));
        assert_eq!(c.root.as_ref().map(LeaseRoot::path), Some(Path::new("/srv/leases")));
        assert_eq!(c.resolved_root(), PathBuf::from("/srv/leases"));
        assert_eq!(c.sync_timeout_ms.get(), 5000);
        // The normalized config: every key, `syncTimeoutMs` explicit.
        assert_eq!(
            serde_json::to_value(parse(json!({"root": "/srv/leases", "timeoutMs": 1}))).unwrap(),
            json!({"root": "/srv/leases", "syncTimeoutMs": 300000, "timeoutMs": 1})
        );
    }

    #[test]
    fn the_schema_documents_the_keys_it_reads() {
        let schema = config_schema::<LocalConfig>();
        let keys: Vec<_> = schema["properties"].as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["root", "syncTimeoutMs"]);
        assert_eq!(schema["properties"]["syncTimeoutMs"]["default"], json!(300000));
        assert_eq!(schema["properties"]["root"]["type"], json!(["string", "null"]));
    }
}
