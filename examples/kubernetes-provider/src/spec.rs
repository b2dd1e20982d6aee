//! The manifests: a lease Pod, or a Job whose one Pod is the same.
//!
//! The Pod is least-privilege: a non-root user and group from the config (`runAsNonRoot`),
//! every capability dropped, no privilege escalation, a read-only root file system (unless the
//! config turns it off), no service-account token (`automountServiceAccountToken: false`), no
//! service links, no host namespaces and no host path: the workspace, the home directory, its
//! `.cache` (`$XDG_CACHE_HOME`) and `/tmp` are `emptyDir` volumes (`/tmp` with a size
//! limit). CPU and memory requests equal the limits. `activeDeadlineSeconds` comes from the
//! config, shortened to the host's `requestedExpiresAt`: the cluster itself ends the lease
//! then. `restartPolicy: Never`: a lease whose main process died is not silently replaced by
//! an empty one.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use serde_json::{json, Value};

use crate::config::Settings;

/// The lease container's name.
pub const CONTAINER: &str = "sandbox";

/// Seconds a deleted Pod has to end before it is killed.
pub const GRACE_SECS: u32 = 1;

/// The main process: waits forever. It is the container's PID 1 and sets no signal handler,
/// so `SIGTERM` does not end it (the kernel drops it): a deleted Pod ends by `SIGKILL` after
/// [`GRACE_SECS`]. A handler would not do: on the dockershim a stray `SIGTERM` reaches PID 1
/// right after the start (measured on Kubernetes 1.20), which ended such leases at once.
const MAIN: &str = "while :; do sleep 86400; done";

/// What a manifest is built from.
#[derive(Debug, Clone)]
pub struct Manifest<'a> {
    /// The settings.
    pub settings: &'a Settings,
    /// Object name.
    pub name: &'a str,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    pub annotations: BTreeMap<String, String>,
    /// `activeDeadlineSeconds`.
    pub deadline_secs: u64,
}

/// The environment every command of a lease starts from.
pub fn base_env(settings: &Settings) -> Vec<(String, String)> {
    vec![
        ("HOME".to_owned(), settings.home.clone()),
        ("TMPDIR".to_owned(), "/tmp".to_owned()),
        ("XDG_CACHE_HOME".to_owned(), settings.cache()),
    ]
}

fn pod_spec(m: &Manifest<'_>) -> Value {
    let s = m.settings;
    let env: Vec<Value> =
        base_env(s).into_iter().map(|(k, v)| json!({"name": k, "value": v})).collect();
    let quantity =
        json!({"cpu": format!("{}m", s.millicpus), "memory": format!("{}Mi", s.memory_mb)});
    json!({
        "restartPolicy": "Never",
        "automountServiceAccountToken": false,
        "enableServiceLinks": false,
        "terminationGracePeriodSeconds": GRACE_SECS,
        "activeDeadlineSeconds": m.deadline_secs,
        "securityContext": {
            "runAsUser": s.uid,
            "runAsGroup": s.gid,
            "runAsNonRoot": true,
            "fsGroup": s.gid,
        },
        "containers": [{
            "name": CONTAINER,
            "image": s.image,
            "imagePullPolicy": s.image_pull_policy,
            "command": ["sh", "-c", MAIN, "sh"],
            "workingDir": s.workspace,
            "env": env,
            "resources": {"limits": quantity, "requests": quantity},
            "securityContext": {
                "allowPrivilegeEscalation": false,
                "privileged": false,
                "readOnlyRootFilesystem": s.read_only_root,
                "capabilities": {"drop": ["ALL"]},
            },
            "volumeMounts": [
                {"name": "workspace", "mountPath": s.workspace},
                {"name": "home", "mountPath": s.home},
                {"name": "cache", "mountPath": s.cache()},
                {"name": "tmp", "mountPath": "/tmp"},
            ],
        }],
        "volumes": [
            {"name": "workspace", "emptyDir": {}},
            {"name": "home", "emptyDir": {}},
            // Its own volume, so `$XDG_CACHE_HOME` exists from the start.
            {"name": "cache", "emptyDir": {}},
            {"name": "tmp", "emptyDir": {"sizeLimit": format!("{}Mi", s.tmp_size_mb)}},
        ],
    })
}

/// The lease Pod.
pub fn pod(m: &Manifest<'_>) -> Pod {
    let value = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": m.name, "labels": m.labels, "annotations": m.annotations},
        "spec": pod_spec(m),
    });
    serde_json::from_value(value).expect("the Pod manifest matches the Pod type")
}

/// The lease Job: one Pod, never retried, ended by the same deadline.
pub fn job(m: &Manifest<'_>) -> Job {
    let value = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": m.name, "labels": m.labels, "annotations": m.annotations},
        "spec": {
            "backoffLimit": 0,
            "completions": 1,
            "parallelism": 1,
            "activeDeadlineSeconds": m.deadline_secs,
            "template": {
                "metadata": {"labels": m.labels, "annotations": m.annotations},
                "spec": pod_spec(m),
            },
        },
    });
    serde_json::from_value(value).expect("the Job manifest matches the Job type")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::KubernetesConfig;

    #[test]
    fn the_pod_is_least_privilege() {
        let settings = Settings::new(&KubernetesConfig::default());
        let m = Manifest {
            settings: &settings,
            name: "paperclip-create-x",
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            deadline_secs: 60,
        };
        let p = serde_json::to_value(pod(&m)).unwrap();
        let spec = &p["spec"];
        assert_eq!(spec["automountServiceAccountToken"], json!(false));
        assert_eq!(spec["securityContext"]["runAsNonRoot"], json!(true));
        assert_eq!(spec["securityContext"]["runAsUser"], json!(1000));
        assert_eq!(spec["activeDeadlineSeconds"], json!(60));
        assert!(spec.get("hostNetwork").is_none() && spec.get("hostPID").is_none());
        let c = &spec["containers"][0];
        assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], json!(true));
        assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], json!(false));
        assert_eq!(c["securityContext"]["capabilities"]["drop"], json!(["ALL"]));
        assert_eq!(c["resources"]["limits"], c["resources"]["requests"]);
        let volumes = spec["volumes"].as_array().unwrap();
        assert!(volumes.iter().all(|v| v.get("hostPath").is_none() && v.get("emptyDir").is_some()));
        let j = serde_json::to_value(job(&m)).unwrap();
        assert_eq!(j["spec"]["backoffLimit"], json!(0));
        assert_eq!(j["spec"]["template"]["spec"], p["spec"]);
    }
}
