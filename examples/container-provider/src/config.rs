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
//! Other keys (the host adds some, such as `timeoutMs`) are ignored. Values are never logged
//! and never quoted in error messages: an error names the key and the expected form.

use std::time::Duration;

use paperclip_sandbox_sdk::schemars::{self, JsonSchema};
use serde_json::{Map, Value};

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

fn standard_socket() -> String {
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
#[derive(Debug, Clone, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerConfig {
    /// Image of every lease container.
    #[schemars(
        title = "Image",
        description = "Image of the lease containers; it must provide sh, tar and node on PATH and a non-root user (default: $PAPERCLIP_CONTAINER_IMAGE, else paperclip-sandbox-base:latest)."
    )]
    pub image: Option<String>,
    /// Engine address.
    #[schemars(
        title = "Engine address",
        description = "Docker Engine API address: unix:///path, tcp://host:port or http://host:port (default: $DOCKER_HOST, else the first standard Docker or podman socket that exists)."
    )]
    pub docker_host: Option<String>,
    /// `uid:gid` of the lease's commands.
    #[schemars(regex(pattern = r"^[1-9][0-9]*:[0-9]+$"))]
    pub user: Option<String>,
    /// Workspace directory inside the container.
    pub workspace: Option<String>,
    /// Home directory inside the container.
    pub home: Option<String>,
    /// Memory limit in MiB.
    #[schemars(range(min = 64, max = 1_048_576))]
    pub memory_mb: Option<u64>,
    /// CPU limit.
    #[schemars(range(min = 0.01, max = 1024.0))]
    pub cpus: Option<f64>,
    /// Process limit.
    #[schemars(range(min = 16, max = 1_000_000))]
    pub pids_limit: Option<i64>,
    /// Size of the `/tmp` tmpfs in MiB.
    #[schemars(range(min = 1, max = 1_048_576))]
    pub tmp_size_mb: Option<u64>,
    /// `none`, or an engine network name (never `host`).
    pub network: Option<String>,
    /// Budget of one fresh acquisition in milliseconds.
    #[schemars(range(min = 1000, max = 86_400_000))]
    pub acquire_timeout_ms: Option<u64>,
    /// Transfer timeout of a sync call in milliseconds.
    #[schemars(range(min = 1, max = 2_147_483_647))]
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

fn absolute_dir(v: &str) -> bool {
    v.starts_with('/')
        && v.len() > 1
        && v.split('/').all(|c| c != ".." && c != ".")
        && !v.contains("//")
        && !v.ends_with('/')
        && !v.contains(['\0', ':', ','])
}

fn image_ref(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 255
        && v.chars().all(|c| c.is_ascii_alphanumeric() || "._-/:@".contains(c))
}

fn docker_host(v: &str) -> bool {
    ["unix:///", "tcp://", "http://"].iter().any(|p| v.starts_with(p) && v.len() > p.len())
}

fn network(v: &str) -> bool {
    v != "host"
        && !v.starts_with("container:")
        && !v.is_empty()
        && v.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

struct Reader<'a> {
    obj: &'a Map<String, Value>,
    errors: Vec<String>,
}

impl Reader<'_> {
    fn string(&mut self, key: &str, ok: fn(&str) -> bool, expected: &str) -> Option<String> {
        match self.obj.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if ok(s) => Some(s.clone()),
            Some(_) => {
                self.errors.push(format!("{key} must be {expected}"));
                None
            }
        }
    }

    fn number(&mut self, key: &str, min: f64, max: f64, whole: bool) -> Option<f64> {
        match self.obj.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => match n.as_f64() {
                Some(x) if x >= min && x <= max && (!whole || x.fract() == 0.0) => Some(x),
                _ => {
                    let kind = if whole { "a whole number" } else { "a number" };
                    self.errors.push(format!("{key} must be {kind} from {min} to {max}"));
                    None
                }
            },
            Some(_) => {
                self.errors.push(format!("{key} must be a number"));
                None
            }
        }
    }
}

impl Settings {
    /// Validates `config` (see the module docs): every error found, or the settings.
    pub fn validate(config: &Map<String, Value>) -> Result<Settings, Vec<String>> {
        let mut r = Reader { obj: config, errors: Vec::new() };
        let image = r.string("image", image_ref, "an image reference");
        let host = r.string("dockerHost", docker_host, "a unix:///, tcp:// or http:// address");
        let user = r.string(
            "user",
            |v| {
                v.split_once(':').is_some_and(|(u, g)| {
                    u.parse::<u32>().is_ok_and(|u| u != 0) && g.parse::<u32>().is_ok()
                })
            },
            "uid:gid with a uid other than 0",
        );
        let workspace = r.string("workspace", absolute_dir, "an absolute directory path");
        let home = r.string("home", absolute_dir, "an absolute directory path");
        let memory = r.number("memoryMb", 64.0, 1_048_576.0, true);
        let cpus = r.number("cpus", 0.01, 1024.0, false);
        let pids = r.number("pidsLimit", 16.0, 1_000_000.0, true);
        let tmp = r.number("tmpSizeMb", 1.0, 1_048_576.0, true);
        let net = r.string("network", network, "none or an engine network name other than host");
        let acquire = r.number("acquireTimeoutMs", 1000.0, 86_400_000.0, true);
        let sync = r.number("syncTimeoutMs", 1.0, 2_147_483_647.0, true);
        if !r.errors.is_empty() {
            return Err(r.errors);
        }
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let (uid, gid) = user
            .as_deref()
            .and_then(|u| u.split_once(':'))
            .and_then(|(u, g)| Some((u.parse().ok()?, g.parse().ok()?)))
            .unwrap_or((1000, 1000));
        let image = image.or_else(|| env(IMAGE_ENV)).unwrap_or_else(|| DEFAULT_IMAGE.to_owned());
        let docker_host = host.or_else(|| env(DOCKER_HOST_ENV)).unwrap_or_else(standard_socket);
        Ok(Settings {
            image,
            docker_host,
            uid,
            gid,
            workspace: workspace.unwrap_or_else(|| "/workspace".to_owned()),
            home: home.unwrap_or_else(|| "/home/sandbox".to_owned()),
            memory_bytes: memory.unwrap_or(2048.0) as i64 * 1024 * 1024,
            nano_cpus: (cpus.unwrap_or(2.0) * 1e9) as i64,
            pids_limit: pids.unwrap_or(512.0) as i64,
            tmp_size_bytes: tmp.unwrap_or(512.0) as u64 * 1024 * 1024,
            network: net.unwrap_or_else(|| "none".to_owned()),
            acquire_timeout: Duration::from_millis(acquire.unwrap_or(120_000.0) as u64),
            sync_timeout_ms: sync.unwrap_or(300_000.0) as u64,
        })
    }

    /// Validates `config`, failing with every error joined.
    pub fn parse(config: &Map<String, Value>) -> Result<Settings, String> {
        Settings::validate(config).map_err(|e| format!("Invalid provider config: {}", e.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn defaults_and_values() {
        let s = Settings::validate(&obj(json!({"image": "img:1", "dockerHost": "unix:///x.sock"})))
            .unwrap();
        assert_eq!((s.uid, s.gid, s.workspace.as_str()), (1000, 1000, "/workspace"));
        assert_eq!(s.network, "none");
        assert_eq!(s.memory_bytes, 2048 * 1024 * 1024);
        assert_eq!(s.cache(), "/home/sandbox/.cache");
        let s = Settings::validate(&obj(json!({
            "image": "img:1", "user": "1234:99", "cpus": 0.5, "pidsLimit": 64, "timeoutMs": 5
        })))
        .unwrap();
        assert_eq!((s.uid, s.gid, s.nano_cpus, s.pids_limit), (1234, 99, 500_000_000, 64));
    }

    #[test]
    fn refuses_root_host_network_and_bad_values_without_quoting_them() {
        let errors = Settings::validate(&obj(json!({
            "user": "0:0", "network": "host", "workspace": "/w/../etc", "memoryMb": 1.5,
            "image": "bad image secret-token", "dockerHost": "ftp://secret-host"
        })))
        .unwrap_err();
        assert_eq!(errors.len(), 6, "{errors:?}");
        let all = errors.join(" ");
        assert!(!all.contains("secret"), "{all}");
        assert!(all.contains("user must be") && all.contains("network must be"), "{all}");
    }
}
