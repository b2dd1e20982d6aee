//! Chaos runs (`run --chaos`): a stateful run whose programs also arm backend faults and heal
//! them, through a fault proxy the harness puts between the provider and its
//! backend, and a leak oracle that lists what the backend still holds after each case.
//!
//! Where the proxy goes, from the config (`--chaos-field KEY`, else the first top-level value
//! that is an address):
//!
//! - `unix://PATH`: a unix-socket proxy (a Docker-API engine); the value is rewritten to the
//!   proxy's socket, and the engine's own socket is the leak oracle (containers whose labels
//!   carry the case's environment id);
//! - `http://HOST:PORT/…`: an endpoint proxy on 127.0.0.1; the value is rewritten;
//! - `https://…`, or no address: a forward proxy, given to the worker as `HTTP_PROXY` and
//!   `HTTPS_PROXY` (with `NODE_USE_ENV_PROXY=1` for Node's built-in `fetch`); `CONNECT` keeps
//!   TLS end to end. A worker that ignores proxy variables is never routed: the chaos
//!   invariants then SKIP with "not routed".

pub(crate) mod proxy;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::context::RunOptions;
use crate::error::HarnessError;
use crate::stateful::report::{run_with, StatefulRun};
use crate::stateful::step::Chaos;
use crate::stateful::{FaultKind, StatefulOptions};

use proxy::{FaultProxy, Upstream};

/// Lists the backend resources of an environment id (the leak oracle), or says why it cannot.
pub type Oracle = Box<dyn FnMut(&str) -> Result<Vec<String>, String> + Send>;

/// The chaos side of a run: the proxy and the leak oracle.
pub(crate) struct ChaosSide {
    proxy: FaultProxy,
    oracle: Oracle,
    /// The Docker-API engine behind a unix route (swept after each case).
    engine: Option<PathBuf>,
}

impl std::fmt::Debug for ChaosSide {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChaosSide").field("proxy", &self.proxy).finish_non_exhaustive()
    }
}

impl Chaos for ChaosSide {
    fn arm(&mut self, fault: FaultKind, after: u8) {
        self.proxy.arm(fault, after);
    }
    fn heal(&mut self) {
        self.proxy.heal();
    }
    fn requests(&self) -> u64 {
        self.proxy.faulted()
    }
    fn leaked(&mut self, environment_id: &str) -> Result<Vec<String>, String> {
        (self.oracle)(environment_id)
    }
    fn sweep(&mut self, environment_id: &str) -> usize {
        let Some(socket) = &self.engine else { return 0 };
        let left = docker_containers(socket, environment_id).unwrap_or_default();
        left.iter().filter(|id| docker_remove(socket, id).is_ok()).count()
    }
}

/// Force-removes container `id` over a Docker-API unix socket.
fn docker_remove(socket: &Path, id: &str) -> Result<(), String> {
    let mut s = UnixStream::connect(socket).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(30))).map_err(|e| e.to_string())?;
    write!(s, "DELETE /containers/{id}?force=true HTTP/1.0\r\nHost: docker\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(|e| e.to_string())?;
    Ok(())
}

/// Lists, over a Docker-API unix socket, the containers whose labels carry `environment_id`.
pub(crate) fn docker_containers(
    socket: &Path,
    environment_id: &str,
) -> Result<Vec<String>, String> {
    let mut s = UnixStream::connect(socket)
        .map_err(|e| format!("the engine socket does not answer: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(30))).map_err(|e| e.to_string())?;
    s.write_all(b"GET /containers/json?all=1 HTTP/1.0\r\nHost: docker\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(|e| format!("the engine's answer: {e}"))?;
    let text = String::from_utf8_lossy(&raw);
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let list: Value = serde_json::from_str(body).map_err(|_| {
        "the engine's container list is not JSON (not a Docker-API engine?)".to_owned()
    })?;
    Ok(list
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| {
            c["Labels"].as_object().is_some_and(|l| {
                l.values().any(|v| v.as_str().is_some_and(|v| v.contains(environment_id)))
            })
        })
        .filter_map(|c| c["Id"].as_str().map(|id| id.chars().take(12).collect()))
        .collect())
}

/// Where the proxy was put, for reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// A unix-socket address in config key `.0`.
    Unix(String),
    /// An `http://` endpoint in config key `.0`.
    Endpoint(String),
    /// `HTTP(S)_PROXY` in the worker's environment.
    Forward,
}

/// Puts a fault proxy in front of the backend `options` name, rewriting the config (written to
/// `dir`) or the worker's environment; `oracle` replaces the built-in leak oracle.
pub(crate) fn setup(
    options: &mut RunOptions,
    field: Option<&str>,
    dir: &Path,
    oracle: Option<Oracle>,
) -> Result<(ChaosSide, Route), HarnessError> {
    let mut config = match &options.config_path {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| HarnessError::io(p, e))?;
            serde_json::from_str::<Value>(&text).map_err(|e| HarnessError::BadFile {
                path: p.clone(),
                message: format!("invalid JSON: {e}"),
            })?
        }
        None => Value::Object(Default::default()),
    };
    let is_address = |v: &Value| {
        v.as_str()
            .is_some_and(|s| ["unix://", "http://", "https://"].iter().any(|p| s.starts_with(p)))
    };
    let key = match field {
        Some(f) => {
            if !config.get(f).is_some_and(is_address) {
                return Err(HarnessError::Usage(format!("--chaos-field {f}: the config has no unix://, http:// or https:// address there")));
            }
            Some(f.to_owned())
        }
        None => config
            .as_object()
            .and_then(|o| o.iter().find(|(_, v)| is_address(v)).map(|(k, _)| k.clone())),
    };
    let blind = |why: &'static str| -> Oracle { Box::new(move |_: &str| Err(why.to_owned())) };
    let io = |e: std::io::Error| HarnessError::io(dir, e);
    std::fs::create_dir_all(dir).map_err(io)?;
    let value =
        key.as_ref().and_then(|k| config[k].as_str().map(str::to_owned)).unwrap_or_default();
    let (proxy, route, default_oracle): (FaultProxy, Route, Oracle) =
        if let Some(path) = value.strip_prefix("unix://") {
            let upstream = PathBuf::from(path);
            let sock = dir.join("chaos.sock");
            let proxy = FaultProxy::unix(&sock, Upstream::Unix(upstream.clone())).map_err(io)?;
            let k = key.clone().expect("an address key");
            config[&k] = Value::String(format!("unix://{}", sock.display()));
            (proxy, Route::Unix(k), Box::new(move |env: &str| docker_containers(&upstream, env)))
        } else if let Some(rest) = value.strip_prefix("http://") {
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let (host, tail) = rest.split_at(end);
            let upstream = if host.contains(':') { host.to_owned() } else { format!("{host}:80") };
            let proxy = FaultProxy::tcp(Upstream::Tcp(upstream)).map_err(io)?;
            let k = key.clone().expect("an address key");
            config[&k] = Value::String(format!("http://{}{tail}", proxy.address));
            (proxy, Route::Endpoint(k), blind("only Docker-API engines are listed by the harness"))
        } else {
            let proxy = FaultProxy::tcp(Upstream::Forward).map_err(io)?;
            let url = format!("http://{}", proxy.address);
            for k in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] {
                options.command.env.push((k.into(), url.clone()));
            }
            options.command.env.push(("NODE_USE_ENV_PROXY".into(), "1".into()));
            options.command.env.push(("NO_PROXY".into(), String::new()));
            (proxy, Route::Forward, blind("only Docker-API engines are listed by the harness"))
        };
    if let (Some(ledger), Some(k)) = (&options.ledger_file, &key) {
        // The ledger names the backend itself: the proxy does not outlive the run.
        ledger.restore_config(k, Value::String(value.clone()));
    }
    let path = dir.join("chaos-config.json");
    std::fs::write(&path, config.to_string()).map_err(io)?;
    options.config_path = Some(path);
    let engine = match (&route, value.strip_prefix("unix://")) {
        (Route::Unix(_), Some(path)) => Some(PathBuf::from(path)),
        _ => None,
    };
    Ok((ChaosSide { proxy, oracle: oracle.unwrap_or(default_oracle), engine }, route))
}

/// A chaos run: the fault proxy set up (see the module docs for where it goes), then a stateful run with faults.
pub fn run(
    options: RunOptions,
    s: StatefulOptions,
    field: Option<&str>,
) -> Result<StatefulRun, HarnessError> {
    run_with_oracle(options, s, field, None)
}

/// As [`run`], with the caller's leak oracle (a test's fake API lists its own resources).
pub fn run_with_oracle(
    mut options: RunOptions,
    s: StatefulOptions,
    field: Option<&str>,
    oracle: Option<Oracle>,
) -> Result<StatefulRun, HarnessError> {
    let dir = std::env::temp_dir().join(format!(
        "pcconf-chaos-{}-{}",
        std::process::id(),
        crate::ids::hex(6)
    ));
    let (mut side, route) = setup(&mut options, field, &dir, oracle)?;
    if s.progress {
        eprintln!("chaos: fault proxy at {} ({route:?})", side.proxy.address);
    }
    let result = run_with(options, s, Some(&mut side));
    drop(side);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Re-executes a kept chaos case with a fresh proxy (the route found as in [`run`]).
pub(crate) fn replay_case(
    mut options: RunOptions,
    case: &crate::stateful::Case,
) -> Result<crate::stateful::step::Outcome, HarnessError> {
    let dir = std::env::temp_dir().join(format!(
        "pcconf-chaos-{}-{}",
        std::process::id(),
        crate::ids::hex(6)
    ));
    let (mut side, _) = setup(&mut options, None, &dir, None)?;
    let result = crate::stateful::replay_case(options, case, Some(&mut side));
    drop(side);
    let _ = std::fs::remove_dir_all(&dir);
    result
}
