//! The provider config and its validation.
//!
//! | Key | Type | Default |
//! |---|---|---|
//! | `image` | image reference | env `PAPERCLIP_CONTAINER_IMAGE`, else [`DEFAULT_IMAGE`] |
//! | `dockerHost` | `unix://…`, `tcp://…` or `http://…` engine address | env `DOCKER_HOST`, else the first of [`STANDARD_SOCKETS`] (then rootless podman's) that exists |
//! | `user` | `uid:gid` the lease's commands run as (never `0`) | `1000:1000` |
//! | `workspace` | absolute directory inside the container (`metadata.remoteCwd`) | `/workspace` |
//! | `home` | absolute home directory inside the container | `/home/sandbox` |
//! | `memoryMb` | memory limit, MiB | 2048 |
//! | `cpus` | CPU limit | 2 |
//! | `pidsLimit` | process limit | 512 |
//! | `tmpSizeMb` | size of the `/tmp` tmpfs, MiB | 512 |
//! | `network` | `none` or the name of an engine network (never `host`) | `none` |
//! | `acquireTimeoutMs` | budget of one fresh acquisition | 120,000 |
//! | `syncTimeoutMs` | transfer timeout of a sync call | 300,000 |
//!
//! [`ContainerConfig`] is the driver's typed config (`#[driver(config = ContainerConfig)]`):
//! the SDK parses each call's config into it before a hook runs and answers a config that does
//! not fit with the path and the expected form, never the value (`environmentValidateConfig`:
//! `{ok: false, errors: ["config.user: expected uid:gid with a uid other than 0"]}`; other
//! hooks: `-32602`). The field deserializers check the forms and ranges a JSON type cannot
//! say; [`Settings::new`] applies the defaults. Other keys (the host adds some, such as
//! `timeoutMs`) are ignored. Values are never logged.

use std::time::Duration;

use paperclip_sandbox_sdk::kit::config::{checked, is_absolute_dir, user_ids};
use paperclip_sandbox_sdk::schemars::{self, JsonSchema};
use serde::{Deserialize, Deserializer};

/// The image used when neither the config nor the environment names one: the base image
/// `.ci/container-engine up` builds (`sh`, `tar`, `node`, user `sandbox`).
pub const DEFAULT_IMAGE: &str = "paperclip-sandbox-base:latest";
/// The environment variable naming the default image.
pub const IMAGE_ENV: &str = "PAPERCLIP_CONTAINER_IMAGE";
/// The environment variable naming the default engine address.
pub const DOCKER_HOST_ENV: &str = "DOCKER_HOST";
/// The engine address used when neither the config nor `DOCKER_HOST` names one and no
/// standard socket exists.
pub const DEFAULT_DOCKER_HOST: &str = "unix:///var/run/docker.sock";

/// The engines' standard sockets, tried in order when neither the config nor `DOCKER_HOST`
/// names an engine: Docker's, rootful podman's; then rootless podman's under
/// `$XDG_RUNTIME_DIR`.
pub const STANDARD_SOCKETS: &[&str] = &["/var/run/docker.sock", "/run/podman/podman.sock"];

/// The engine address of a worker whose config and environment name none: the first of
/// [`STANDARD_SOCKETS`], then `$XDG_RUNTIME_DIR/podman/podman.sock`, that exists, else
/// [`DEFAULT_DOCKER_HOST`]. A Paperclip host starts its workers with a minimal environment
/// (no `DOCKER_HOST`), so this is where a config without `dockerHost` leads under a real host.
pub fn standard_socket() -> String {
    let rootless = std::env::var("XDG_RUNTIME_DIR")
        .ok()
        .filter(|d| d.starts_with('/'))
        .map(|d| format!("{d}/podman/podman.sock"));
    STANDARD_SOCKETS
        .iter()
        .map(|s| (*s).to_owned())
        .chain(rootless)
        .find(|p| std::path::Path::new(p).exists())
        .map_or_else(|| DEFAULT_DOCKER_HOST.to_owned(), |p| format!("unix://{p}"))
}

/// Where and how the provider runs containers.
//
// The JSON Schema (schemars, through the SDK's re-export) is the driver's `configSchema`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerConfig {
    /// Image of every lease container.
    #[schemars(
        title = "Image",
        description = "Image of the lease containers; it must provide sh, tar and node on PATH and a non-root user (default: $PAPERCLIP_CONTAINER_IMAGE, else paperclip-sandbox-base:latest)."
    )]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "paperclip_sandbox_sdk::kit::config::image"
    )]
    pub image: Option<String>,
    /// Engine address.
    #[schemars(
        title = "Engine address",
        description = "Docker Engine API address: unix:///path, tcp://host:port or http://host:port (default: $DOCKER_HOST, else the first standard Docker or podman socket that exists)."
    )]
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "engine_address")]
    pub docker_host: Option<String>,
    /// `uid:gid` of the lease's commands.
    #[schemars(regex(pattern = r"^[1-9][0-9]*:[0-9]+$"))]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "paperclip_sandbox_sdk::kit::config::user"
    )]
    pub user: Option<String>,
    /// Workspace directory inside the container.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "directory")]
    pub workspace: Option<String>,
    /// Home directory inside the container.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "directory")]
    pub home: Option<String>,
    /// Memory limit in MiB.
    #[schemars(range(min = 64, max = 1_048_576))]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "paperclip_sandbox_sdk::kit::config::whole::<_, 64, 1_048_576>"
    )]
    pub memory_mb: Option<u64>,
    /// CPU limit.
    #[schemars(range(min = 0.01, max = 1024.0))]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "paperclip_sandbox_sdk::kit::config::cpus"
    )]
    pub cpus: Option<f64>,
    /// Process limit.
    #[schemars(range(min = 16, max = 1_000_000))]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "paperclip_sandbox_sdk::kit::config::whole::<_, 16, 1_000_000>"
    )]
    pub pids_limit: Option<u64>,
    /// Size of the `/tmp` tmpfs in MiB.
    #[schemars(range(min = 1, max = 1_048_576))]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "paperclip_sandbox_sdk::kit::config::whole::<_, 1, 1_048_576>"
    )]
    pub tmp_size_mb: Option<u64>,
    /// `none`, or an engine network name (never `host`).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "network")]
    pub network: Option<String>,
    /// Budget of one fresh acquisition in milliseconds.
    #[schemars(range(min = 1000, max = 86_400_000))]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "paperclip_sandbox_sdk::kit::config::whole::<_, 1000, 86_400_000>"
    )]
    pub acquire_timeout_ms: Option<u64>,
    /// Transfer timeout of a sync call in milliseconds.
    #[schemars(range(min = 1, max = 2_147_483_647))]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "paperclip_sandbox_sdk::kit::config::whole::<_, 1, 2_147_483_647>"
    )]
    pub sync_timeout_ms: Option<u64>,
}

/// A validated config with every default applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Image reference.
    pub image: String,
    /// Engine address.
    pub docker_host: String,
    /// User id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
    /// Workspace directory (absolute, normalized).
    pub workspace: String,
    /// Home directory (absolute, normalized).
    pub home: String,
    /// Memory limit in bytes.
    pub memory_bytes: i64,
    /// CPU limit in billionths of a CPU.
    pub nano_cpus: i64,
    /// Process limit.
    pub pids_limit: i64,
    /// `/tmp` size in bytes.
    pub tmp_size_bytes: u64,
    /// Network mode.
    pub network: String,
    /// Acquisition budget.
    pub acquire_timeout: Duration,
    /// Sync transfer timeout in milliseconds.
    pub sync_timeout_ms: u64,
}

impl Settings {
    /// The `uid:gid` string the engine expects.
    pub fn user(&self) -> String {
        format!("{}:{}", self.uid, self.gid)
    }

    /// The cache directory (`$XDG_CACHE_HOME`).
    pub fn cache(&self) -> String {
        format!("{}/.cache", self.home.trim_end_matches('/'))
    }
}

fn is_engine_address(v: &str) -> bool {
    ["unix:///", "tcp://", "http://"].iter().any(|p| v.starts_with(p) && v.len() > p.len())
}

fn is_network(v: &str) -> bool {
    v != "host"
        && !v.starts_with("container:")
        && !v.is_empty()
        && v.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

fn engine_address<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    checked(d, is_engine_address, "a unix:///, tcp:// or http:// address")
}

fn directory<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    checked(d, is_absolute_dir, "an absolute directory path")
}

fn network<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    checked(d, is_network, "none or an engine network name other than host")
}

impl Settings {
    /// The settings of `config`: every default applied (see the module docs).
    pub fn new(config: &ContainerConfig) -> Settings {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let (uid, gid) = user_ids(config.user.as_deref(), (1000, 1000));
        let c = config.clone();
        Settings {
            image: c.image.or_else(|| env(IMAGE_ENV)).unwrap_or_else(|| DEFAULT_IMAGE.to_owned()),
            docker_host: c
                .docker_host
                .or_else(|| env(DOCKER_HOST_ENV))
                .unwrap_or_else(standard_socket),
            uid,
            gid,
            workspace: c.workspace.unwrap_or_else(|| "/workspace".to_owned()),
            home: c.home.unwrap_or_else(|| "/home/sandbox".to_owned()),
            memory_bytes: c.memory_mb.unwrap_or(2048) as i64 * 1024 * 1024,
            nano_cpus: (c.cpus.unwrap_or(2.0) * 1e9) as i64,
            pids_limit: c.pids_limit.unwrap_or(512) as i64,
            tmp_size_bytes: c.tmp_size_mb.unwrap_or(512) * 1024 * 1024,
            network: c.network.unwrap_or_else(|| "none".to_owned()),
            acquire_timeout: Duration::from_millis(c.acquire_timeout_ms.unwrap_or(120_000)),
            sync_timeout_ms: c.sync_timeout_ms.unwrap_or(300_000),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings(config: serde_json::Value) -> Settings {
        Settings::new(&serde_json::from_value(config).unwrap())
    }

    #[test]
    fn defaults_and_values() {
        let s = settings(json!({"image": "img:1", "dockerHost": "unix:///x.sock"}));
        assert_eq!((s.uid, s.gid, s.workspace.as_str()), (1000, 1000, "/workspace"));
        assert_eq!(s.network, "none");
        assert_eq!(s.memory_bytes, 2048 * 1024 * 1024);
        assert_eq!(s.cache(), "/home/sandbox/.cache");
        let s = settings(json!({
            "image": "img:1", "user": "1234:99", "cpus": 0.5, "pidsLimit": 64, "timeoutMs": 5
        }));
        assert_eq!((s.uid, s.gid, s.nano_cpus, s.pids_limit), (1234, 99, 500_000_000, 64));
        // A whole-valued float is a whole number (JSON Schema's `integer`).
        let s = settings(json!({"image": "img:1", "memoryMb": 1024.0, "pidsLimit": 64.0}));
        assert_eq!((s.memory_bytes, s.pids_limit), (1024 * 1024 * 1024, 64));
    }

    /// The SDK answers a config that does not fit [`ContainerConfig`] before a hook runs.
    #[tokio::test]
    async fn refuses_root_host_network_and_bad_values_by_path_without_quoting_them() {
        let client =
            paperclip_sandbox_sdk::testing::TestClient::new(crate::ContainerProvider::default());
        let cases = [
            (json!({"user": "0:0"}), "config.user: expected uid:gid with a uid other than 0"),
            (
                json!({"network": "host"}),
                "config.network: expected none or an engine network name other than host",
            ),
            (
                json!({"workspace": "/w/../etc"}),
                "config.workspace: expected an absolute directory path",
            ),
            (
                json!({"memoryMb": 1.5}),
                "config.memoryMb: expected a whole number from 64 to 1048576",
            ),
            (json!({"cpus": 0}), "config.cpus: expected a number from 0.01 to 1024"),
            (
                json!({"memoryMb": -64.0}),
                "config.memoryMb: expected a whole number from 64 to 1048576",
            ),
            (
                json!({"memoryMb": "64"}),
                "config.memoryMb: expected a whole number from 64 to 1048576",
            ),
            (
                json!({"image": "bad image secret-token"}),
                "config.image: expected an image reference",
            ),
            (
                json!({"dockerHost": "ftp://secret-host"}),
                "config.dockerHost: expected a unix:///, tcp:// or http:// address",
            ),
            (json!({"home": 7}), "config.home: expected an absolute directory path"),
        ];
        for (config, expected) in cases {
            let params = json!({"driverKey": "container", "config": config});
            let answer = client.call_raw("environmentValidateConfig", params).await.unwrap();
            assert_eq!(answer, json!({"ok": false, "errors": [expected]}));
        }
    }
}
