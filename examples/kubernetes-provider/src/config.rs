//! The provider config and its validation.
//!
//! | Key | Type | Default |
//! |---|---|---|
//! | `kubeconfig` | absolute path of a kubeconfig file | env `KUBECONFIG`, else `~/.kube/config`, else the in-cluster service account |
//! | `namespace` | namespace of the lease Pods and Jobs | env `PAPERCLIP_KUBERNETES_NAMESPACE`, else `default` |
//! | `backend` | `pod` (a bare Pod per lease) or `job` (a Job per lease) | `pod` |
//! | `image` | image reference | env `PAPERCLIP_KUBERNETES_IMAGE`, else [`DEFAULT_IMAGE`] |
//! | `imagePullPolicy` | `Always`, `IfNotPresent` or `Never` | `IfNotPresent` |
//! | `user` | `uid:gid` of the lease's processes (never `0`) | `1000:1000` |
//! | `workspace` | absolute directory (an `emptyDir`; `metadata.remoteCwd`) | `/workspace` |
//! | `home` | absolute home directory (an `emptyDir`) | `/home/sandbox` |
//! | `memoryMb` | memory request and limit, MiB | 1024 |
//! | `cpus` | CPU request and limit | 1 |
//! | `tmpSizeMb` | size limit of the `/tmp` `emptyDir`, MiB | 512 |
//! | `activeDeadlineSeconds` | the Pod's `activeDeadlineSeconds` (the cluster ends it then) | 86,400 |
//! | `readOnlyRootFilesystem` | mount the image read-only | `true` |
//! | `acquireTimeoutMs` | budget of one fresh acquisition | 120,000 |
//! | `syncTimeoutMs` | transfer timeout of a sync call | 300,000 |
//!
//! [`KubernetesConfig`] is the driver's typed config: the SDK parses each call's config into
//! it before a hook runs and answers a config that does not fit with the path and the
//! expected form, never the value. [`Settings::new`] applies the defaults. Other keys are
//! ignored. Values are never logged.

use std::time::Duration;

use paperclip_sandbox_sdk::kit::config::{checked, is_absolute_dir, refuse, user_ids};
use paperclip_sandbox_sdk::schemars::{self, JsonSchema};
use serde::{Deserialize, Deserializer};

/// The image used when neither the config nor the environment names one: the sandbox image
/// `.ci/kubernetes up` imports into its node (busybox, plus node when the machine has it).
pub const DEFAULT_IMAGE: &str = "localhost/paperclip-sandbox-busybox:latest";
/// The environment variable naming the default image.
pub const IMAGE_ENV: &str = "PAPERCLIP_KUBERNETES_IMAGE";
/// The environment variable naming the default namespace.
pub const NAMESPACE_ENV: &str = "PAPERCLIP_KUBERNETES_NAMESPACE";

/// What backs a lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// A bare Pod per lease: exec, native sync, reuse.
    #[default]
    Pod,
    /// A `batch/v1` Job per lease (its one Pod runs the commands). The lease metadata says
    /// `backend: "job"`, which makes the host narrow native sync off.
    Job,
}

impl Backend {
    /// The wire name (`pod`, `job`).
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Pod => "pod",
            Backend::Job => "job",
        }
    }
}

/// Where and how the provider runs lease Pods.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubernetesConfig {
    /// Path of the kubeconfig file.
    #[schemars(
        title = "Kubeconfig",
        description = "Absolute path of a kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else the in-cluster service account)."
    )]
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "path")]
    pub kubeconfig: Option<String>,
    /// Namespace of the lease Pods and Jobs.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "namespace")]
    pub namespace: Option<String>,
    /// `pod` or `job`.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "backend")]
    pub backend: Option<Backend>,
    /// Image of every lease Pod.
    #[schemars(
        title = "Image",
        description = "Image of the lease Pods; it must provide sh, tar, head and a non-root user (default: $PAPERCLIP_KUBERNETES_IMAGE, else localhost/paperclip-sandbox-busybox:latest)."
    )]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "paperclip_sandbox_sdk::kit::config::image"
    )]
    pub image: Option<String>,
    /// `Always`, `IfNotPresent` or `Never`.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "pull_policy")]
    pub image_pull_policy: Option<String>,
    /// `uid:gid` of the lease's processes.
    #[schemars(regex(pattern = r"^[1-9][0-9]*:[0-9]+$"))]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "paperclip_sandbox_sdk::kit::config::user"
    )]
    pub user: Option<String>,
    /// Workspace directory inside the Pod.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "directory")]
    pub workspace: Option<String>,
    /// Home directory inside the Pod.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "directory")]
    pub home: Option<String>,
    /// Memory request and limit in MiB.
    #[schemars(range(min = 16, max = 1_048_576))]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "paperclip_sandbox_sdk::kit::config::whole::<_, 16, 1_048_576>"
    )]
    pub memory_mb: Option<u64>,
    /// CPU request and limit.
    #[schemars(range(min = 0.01, max = 1024.0))]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "paperclip_sandbox_sdk::kit::config::cpus"
    )]
    pub cpus: Option<f64>,
    /// Size limit of the `/tmp` volume in MiB.
    #[schemars(range(min = 1, max = 1_048_576))]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "paperclip_sandbox_sdk::kit::config::whole::<_, 1, 1_048_576>"
    )]
    pub tmp_size_mb: Option<u64>,
    /// The Pod's `activeDeadlineSeconds`.
    #[schemars(range(min = 10, max = 31_536_000))]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "paperclip_sandbox_sdk::kit::config::whole::<_, 10, 31_536_000>"
    )]
    pub active_deadline_seconds: Option<u64>,
    /// Mount the image read-only.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "paperclip_sandbox_sdk::kit::config::flag"
    )]
    pub read_only_root_filesystem: Option<bool>,
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
    /// The kubeconfig path (`None`: inferred).
    pub kubeconfig: Option<String>,
    /// Namespace.
    pub namespace: String,
    /// Backend.
    pub backend: Backend,
    /// Image reference.
    pub image: String,
    /// Pull policy.
    pub image_pull_policy: String,
    /// User id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
    /// Workspace directory (absolute, normalized).
    pub workspace: String,
    /// Home directory (absolute, normalized).
    pub home: String,
    /// Memory in MiB.
    pub memory_mb: u64,
    /// CPU in thousandths.
    pub millicpus: u64,
    /// `/tmp` size in MiB.
    pub tmp_size_mb: u64,
    /// `activeDeadlineSeconds`.
    pub active_deadline_seconds: u64,
    /// Read-only root file system.
    pub read_only_root: bool,
    /// Acquisition budget.
    pub acquire_timeout: Duration,
    /// Sync transfer timeout in milliseconds.
    pub sync_timeout_ms: u64,
}

impl Settings {
    /// The settings of `config`: every default applied (see the module docs).
    pub fn new(config: &KubernetesConfig) -> Settings {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let (uid, gid) = user_ids(config.user.as_deref(), (1000, 1000));
        let c = config.clone();
        Settings {
            kubeconfig: c.kubeconfig,
            namespace: c
                .namespace
                .or_else(|| env(NAMESPACE_ENV).filter(|n| is_dns_label(n)))
                .unwrap_or_else(|| "default".to_owned()),
            backend: c.backend.unwrap_or_default(),
            image: c.image.or_else(|| env(IMAGE_ENV)).unwrap_or_else(|| DEFAULT_IMAGE.to_owned()),
            image_pull_policy: c.image_pull_policy.unwrap_or_else(|| "IfNotPresent".to_owned()),
            uid,
            gid,
            workspace: c.workspace.unwrap_or_else(|| "/workspace".to_owned()),
            home: c.home.unwrap_or_else(|| "/home/sandbox".to_owned()),
            memory_mb: c.memory_mb.unwrap_or(1024),
            millicpus: (c.cpus.unwrap_or(1.0) * 1000.0).round().max(10.0) as u64,
            tmp_size_mb: c.tmp_size_mb.unwrap_or(512),
            active_deadline_seconds: c.active_deadline_seconds.unwrap_or(86_400),
            read_only_root: c.read_only_root_filesystem.unwrap_or(true),
            acquire_timeout: Duration::from_millis(c.acquire_timeout_ms.unwrap_or(120_000)),
            sync_timeout_ms: c.sync_timeout_ms.unwrap_or(300_000),
        }
    }

    /// The cache directory (`$XDG_CACHE_HOME`).
    pub fn cache(&self) -> String {
        format!("{}/.cache", self.home.trim_end_matches('/'))
    }
}

/// True for a DNS-1123 label (a namespace name): lowercase letters, digits and `-`, at most
/// 63, starting and ending with a letter or digit.
pub fn is_dns_label(v: &str) -> bool {
    (1..=63).contains(&v.len())
        && v.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !v.starts_with('-')
        && !v.ends_with('-')
}

fn is_absolute_path(v: &str) -> bool {
    v.starts_with('/') && !v.contains('\0')
}

fn path<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    checked(d, is_absolute_path, "an absolute file path")
}

fn namespace<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    checked(d, is_dns_label, "a namespace name (lowercase letters, digits and '-', at most 63)")
}

fn backend<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Backend>, D::Error> {
    Option::<Backend>::deserialize(d).map_err(|_| refuse("pod or job"))
}

fn pull_policy<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    checked(
        d,
        |v| ["Always", "IfNotPresent", "Never"].contains(&v),
        "Always, IfNotPresent or Never",
    )
}

fn directory<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    checked(d, |v| is_absolute_dir(v) && v != "/tmp", "an absolute directory path other than /tmp")
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
        let s = settings(json!({"image": "img:1", "namespace": "ns-1"}));
        assert_eq!((s.uid, s.gid, s.workspace.as_str()), (1000, 1000, "/workspace"));
        assert_eq!((s.namespace.as_str(), s.backend), ("ns-1", Backend::Pod));
        assert_eq!(
            (s.memory_mb, s.millicpus, s.image_pull_policy.as_str()),
            (1024, 1000, "IfNotPresent")
        );
        assert!(s.read_only_root);
        let s =
            settings(json!({"backend": "job", "cpus": 0.25, "user": "1234:99", "timeoutMs": 5}));
        assert_eq!((s.backend, s.millicpus, s.uid, s.gid), (Backend::Job, 250, 1234, 99));
    }

    /// The SDK answers a config that does not fit [`KubernetesConfig`] before a hook runs.
    #[tokio::test]
    async fn refuses_root_and_bad_values_by_path_without_quoting_them() {
        let client =
            paperclip_sandbox_sdk::testing::TestClient::new(crate::KubernetesProvider::default());
        let cases = [
            (json!({"user": "0:0"}), "config.user: expected uid:gid with a uid other than 0"),
            (json!({"backend": "vm-secret"}), "config.backend: expected pod or job"),
            (
                json!({"namespace": "Secret_NS"}),
                "config.namespace: expected a namespace name (lowercase letters, digits and '-', at most 63)",
            ),
            (json!({"kubeconfig": "relative/secret"}), "config.kubeconfig: expected an absolute file path"),
            (
                json!({"workspace": "/tmp"}),
                "config.workspace: expected an absolute directory path other than /tmp",
            ),
            (
                json!({"imagePullPolicy": "Sometimes"}),
                "config.imagePullPolicy: expected Always, IfNotPresent or Never",
            ),
            (
                json!({"activeDeadlineSeconds": 1}),
                "config.activeDeadlineSeconds: expected a whole number from 10 to 31536000",
            ),
        ];
        for (config, expected) in cases {
            let params = json!({"driverKey": "kubernetes", "config": config});
            let answer = client.call_raw("environmentValidateConfig", params).await.unwrap();
            assert_eq!(answer, json!({"ok": false, "errors": [expected]}));
        }
    }
}
