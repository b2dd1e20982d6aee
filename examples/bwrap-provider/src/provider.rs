//! [`BwrapProvider`]: a [`LocalProvider`](local_provider::provider::LocalProvider) whose `execute` wraps commands with bubblewrap.
//!
//! Every hook but `probe` and `execute` is the local provider's, unchanged.
//! The mode of a call is decided per call ([`BwrapProvider::mode_for`]):
//!
//! | Situation | Mode | Reason |
//! |---|---|---|
//! | config `bwrap: "off"` | `plain` | disabled by config |
//! | a prerequisite is missing ([`crate::prereq::detect`]) | `plain` | which one |
//! | a wrapped run failed to start earlier ([`crate::wrap::start_failure`]) | `plain` | degraded: bwrap's error, until the next `environmentProbe` re-probes |
//! | otherwise | `bwrap` | how bwrap runs (root, user namespaces, sudo) |
//!
//! A missing prerequisite never fails a call: the command runs plainly.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use local_provider::config::LocalSettings;
use local_provider::error::{LocalError, Result};
use local_provider::exec::{base_env, OutputSink, ProcessGroups};
use local_provider::leases::LeaseStore;
use local_provider::provider::LocalDriver;
use paperclip_sandbox_protocol::methods::execute::{ExecuteParams, ExecuteResult, OutputStream};
use paperclip_sandbox_protocol::methods::lease::{
    Diagnostic, DiagnosticSeverity, JsonObject, ProbeParams, ProbeResult,
};
use paperclip_sandbox_sdk::PluginManifest;
use serde_json::{json, Value};

use crate::config::{BwrapConfig, BwrapSetting};
use crate::prereq::{self, Detection};
use crate::wrap::{start_failure, WrappedEnd, Wrapper, MARKER_PREFIX};

/// Stderr held back before the start marker appears, at most; past it the run counts as
/// started (bwrap's own errors are one short line).
const HOLD_LIMIT: usize = 64 * 1024;

/// The mode of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Wrap with this wrapper.
    Bwrap(Wrapper),
    /// Run plainly, for this reason.
    Plain(String),
}

impl Mode {
    /// `"bwrap"` or `"plain"`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Bwrap(_) => "bwrap",
            Self::Plain(_) => "plain",
        }
    }
}

#[derive(Debug)]
struct State {
    detection: Detection,
    degraded: Option<String>,
}

/// The bwrap provider (see the module docs). Clones share the probe cache.
///
/// Its plugin manifest is derived ([`PluginManifest`]; `bwrap-provider --manifest
/// [--profile …]` prints it) and checked when the crate compiles against the hooks of the
/// `#[provider]` block in [`crate::worker`]. The capabilities are the local provider's
/// (reusableLeases, the native sync pair, incrementalSessionOutput); the config schema comes
/// from [`BwrapConfig`]. `defaultAcquireTimeoutMs` is 60 s, as the local provider's (acquiring
/// is creating a directory), and is left out of the paperclip-2026-09 manifest.
#[derive(Debug, Clone, PluginManifest)]
#[plugin(
    id = "paperclip-sandbox.bwrap-provider",
    display_name = "bwrap provider",
    description = "Example Paperclip sandbox provider: local lease directories, commands wrapped by bubblewrap when available.",
    author = "paperclip-sandbox developers"
)]
#[driver(
    key = "bwrap",
    display_name = "Local directory + bubblewrap",
    description = "Each lease is a private directory on the worker's machine; commands run under an advisory bubblewrap wrapper when its prerequisites hold.",
    config = BwrapConfig,
    capabilities(reusableLeases, nativeSyncIn, nativeSyncOut, incrementalSessionOutput),
    default_acquire_timeout_ms = 60_000
)]
pub struct BwrapProvider {
    local: LocalDriver<BwrapConfig>,
    state: Arc<Mutex<State>>,
}

impl BwrapProvider {
    /// A provider, probing the prerequisites now (blocking, a few short processes). The host
    /// profile is the worker's, read per call from the context.
    #[allow(clippy::new_without_default)] // probing runs processes: not a `Default`
    pub fn new() -> Self {
        Self::with_detection(prereq::detect())
    }

    /// A provider with a given probe outcome (tests; a later `environmentProbe` re-probes).
    pub fn with_detection(detection: Detection) -> Self {
        let state = State { detection, degraded: None };
        Self { local: LocalDriver::new(), state: Arc::new(Mutex::new(state)) }
    }

    /// The wrapped local provider's driver, serving the bwrap config.
    pub fn local(&self) -> &LocalDriver<BwrapConfig> {
        &self.local
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The cached probe outcome.
    pub fn detection(&self) -> Detection {
        self.state().detection.clone()
    }

    /// The mode a call with `setting` runs in now.
    pub fn mode_for(&self, setting: BwrapSetting) -> Mode {
        if setting == BwrapSetting::Off {
            return Mode::Plain("disabled by config (bwrap: \"off\")".into());
        }
        let state = self.state();
        match (&state.detection.wrapper, &state.degraded) {
            (None, _) => Mode::Plain(state.detection.reason.clone()),
            (Some(_), Some(why)) => Mode::Plain(format!("degraded: {why}")),
            (Some(w), None) => Mode::Bwrap(w.clone()),
        }
    }

    /// `environmentProbe`: the local provider's probe, after re-probing the prerequisites;
    /// the mode goes in the summary, a diagnostic and `metadata`
    /// (`{bwrapMode, reason, bwrapSetting, launcher?, checks}`). A plain mode is a warning, never
    /// a failure.
    pub async fn probe(&self, params: &ProbeParams<BwrapConfig>) -> Result<ProbeResult> {
        let setting = params.base.config.bwrap;
        let mut result = self.local.probe(params).await?;
        let detection = tokio::task::spawn_blocking(prereq::detect)
            .await
            .unwrap_or_else(|e| Detection::plain(format!("the probe task failed: {e}")));
        let facts = detection.facts.clone();
        {
            let mut state = self.state();
            state.detection = detection;
            state.degraded = None;
        }
        let mode = self.mode_for(setting);
        let mut metadata = result.metadata.take().unwrap_or_default();
        metadata.insert("bwrapMode".into(), json!(mode.name()));
        metadata.insert("bwrapSetting".into(), json!(setting.as_str()));
        let (reason, diagnostic) = match &mode {
            Mode::Bwrap(w) => {
                let reason = self.state().detection.reason.clone();
                metadata.insert("launcher".into(), json!(w.launcher.as_str()));
                let d = Diagnostic::new(
                    DiagnosticSeverity::Info,
                    format!("bwrap mode: commands run under bubblewrap ({reason})"),
                )
                .with_code("bwrap_active");
                (reason, d)
            }
            Mode::Plain(reason) => {
                let d = Diagnostic::new(
                    DiagnosticSeverity::Warning,
                    format!("plain mode: commands run without bubblewrap ({reason})"),
                )
                .with_code("bwrap_inactive");
                (reason.clone(), d)
            }
        };
        metadata.insert("reason".into(), json!(reason));
        metadata.insert("checks".into(), Value::Object(facts));
        let ready = if result.ok { "bwrap provider ready" } else { "bwrap provider is not usable" };
        result.summary = Some(format!("{ready}; {} mode ({reason})", mode.name()));
        Ok(result.with_diagnostic(diagnostic).with_metadata(metadata))
    }

    /// `environmentExecute`: the local provider's execute, wrapped when the mode is `bwrap`;
    /// a wrapped run that failed to start is run again plainly and degrades the mode. The
    /// result's `metadata` says which mode ran (`bwrapMode`, `bwrapReason` when plain).
    /// Output goes to `sink` (held back until the command, not bwrap, runs).
    pub async fn execute<S: OutputSink>(
        &self,
        params: &ExecuteParams<BwrapConfig>,
        sink: &mut S,
        cancel: impl Future<Output = ()>,
    ) -> Result<ExecuteResult> {
        let mode = self.mode_for(params.base.config.bwrap);
        let wrapper = match mode {
            Mode::Plain(reason) => {
                let out = self.local.execute(params, sink, cancel).await?;
                return Ok(with_mode(out, "plain", Some(&reason)));
            }
            Mode::Bwrap(w) => w,
        };
        let Ok(lease) = lease_dir(params) else {
            // The local provider reports the same problem (missing, stopped, expired lease).
            return self.local.execute(params, sink, cancel).await;
        };
        let tmp = lease.join(".tmp");
        let _ = std::fs::create_dir_all(&tmp);
        let marker = tmp.join(format!("{MARKER_PREFIX}{}", local_provider::random_hex(8)));
        let mut env = base_env(&lease);
        env.extend(params.env.clone().unwrap_or_default());
        let inv = wrapper.wrap(
            &lease,
            &marker,
            &env,
            &params.command,
            params.args.as_deref().unwrap_or_default(),
        );
        let mut wrapped = params.clone();
        wrapped.command = inv.program;
        wrapped.args = Some(inv.args);

        let mut cancel = std::pin::pin!(cancel);
        let mut gate =
            Gate { marker: &marker, started: false, held: Vec::new(), held_bytes: 0, sink };
        let out = self.local.execute(&wrapped, &mut gate, cancel.as_mut()).await;
        let marker_seen = gate.started || marker.exists();
        let _ = std::fs::remove_file(&marker);
        let out = out?;
        let killed = out.timed_out
            || out.metadata.as_ref().is_some_and(|m| m.get("cancelled") == Some(&json!(true)));
        let end = WrappedEnd { marker_seen, exit_code: out.exit_code, killed, stderr: &out.stderr };
        let Some(why) = start_failure(end) else {
            gate.release().await;
            return Ok(with_mode(out, "bwrap", None));
        };
        let sink = gate.sink;
        tracing::warn!(reason = %why, "bwrap failed to start; running the command plainly");
        self.state().degraded = Some(why.clone());
        let reason = format!("degraded: bwrap failed to start ({why})");
        let plain = self.local.execute(params, sink, cancel).await?;
        let mut plain = with_mode(plain, "plain", Some(&reason));
        plain
            .metadata
            .get_or_insert_with(JsonObject::new)
            .insert("bwrapDegraded".into(), json!(true));
        Ok(plain)
    }
}

/// Output held back until the start marker shows that the command (not bwrap) is running,
/// then passed on to `sink`.
struct Gate<'a, S> {
    marker: &'a Path,
    started: bool,
    held: Vec<(OutputStream, String)>,
    held_bytes: usize,
    sink: &'a mut S,
}

impl<S: OutputSink> Gate<'_, S> {
    /// Passes on everything held back.
    async fn release(&mut self) {
        for (stream, chunk) in std::mem::take(&mut self.held) {
            self.sink.chunk(stream, &chunk).await;
        }
    }
}

impl<S: OutputSink> OutputSink for Gate<'_, S> {
    async fn chunk<'b>(&'b mut self, stream: OutputStream, text: &'b str) {
        if !self.started && (self.held_bytes + text.len() > HOLD_LIMIT || self.marker.exists()) {
            self.started = true;
            self.release().await;
        }
        if self.started {
            self.sink.chunk(stream, text).await;
        } else {
            self.held_bytes += text.len();
            self.held.push((stream, text.to_owned()));
        }
    }
}

/// The canonical directory of the call's lease, when it is active.
fn lease_dir(params: &ExecuteParams<BwrapConfig>) -> Result<PathBuf> {
    let store = LeaseStore::open(&params.base.config.resolved_root(), ProcessGroups::default())?;
    let dir = store.active_dir(params.lease.required_id()?)?;
    dir.canonicalize().map_err(|e| LocalError::io("resolve the lease directory", e))
}

fn with_mode(mut out: ExecuteResult, mode: &str, reason: Option<&str>) -> ExecuteResult {
    let metadata = out.metadata.get_or_insert_with(JsonObject::new);
    metadata.insert("bwrapMode".into(), json!(mode));
    if let Some(reason) = reason {
        metadata.insert("bwrapReason".into(), json!(reason));
    }
    out
}

#[cfg(test)]
#[path = "provider_tests.rs"]
mod tests;
