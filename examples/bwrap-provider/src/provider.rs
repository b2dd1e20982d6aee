//! [`BwrapProvider`]: a [`LocalProvider`](local_provider::provider::LocalProvider) whose `execute` wraps commands with bubblewrap.
//!
//! Every hook but `probe` and `execute` is the local provider's, unchanged (`#[provider(delegate
//! = LocalDriver<BwrapConfig>)]`); `probe` calls the local provider's probe hook and adds the
//! mode, `execute` runs the command with the local provider's runner ([`local_provider::exec`]).
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
use std::path::Path;
use std::sync::{Arc, Mutex};

use local_provider::error::{LocalError, Result};
use local_provider::exec::{self, base_env, ExecRequest, OutputSink};
use local_provider::provider::{LocalBackend, LocalDriver};
use paperclip_sandbox_sdk::prelude::*;
use serde_json::json;

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
/// [--profile …]` prints it) and checked when the crate compiles against the hooks of its
/// `#[provider]` block (its own and the local provider's it delegates to). The capabilities
/// are the local provider's (reusableLeases, the native sync pair, incrementalSessionOutput);
/// the config schema comes from [`BwrapConfig`]. `defaultAcquireTimeoutMs` is 60 s, as the
/// local provider's (acquiring is creating a directory), and is left out of the
/// paperclip-2026-09 manifest.
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

    /// Runs `req` in the lease directory `dir` with the local provider's runner (its process
    /// groups, so the lease's stop ends the command).
    async fn run(
        &self,
        dir: &Path,
        req: ExecRequest,
        sink: &mut impl OutputSink,
        cancel: impl Future<Output = ()>,
    ) -> Result<ExecuteResult> {
        let out = exec::run(dir, req, Some(self.local.groups()), sink, cancel).await?;
        Ok(out.into_execute_result())
    }
}

impl AsRef<LocalDriver<BwrapConfig>> for BwrapProvider {
    fn as_ref(&self) -> &LocalDriver<BwrapConfig> {
        &self.local
    }
}

/// The hooks bwrap changes; every other hook (validation, leases, workspace, sync, shutdown)
/// is the local provider's own, through `delegate` (same wire errors and envelopes, the typed
/// [`BwrapConfig`]). The backend is the local provider's, whose
/// [`extra`](LocalBackend::extra) is the config's `bwrap` setting: the two share one per
/// config. Errors are [`LocalError`]s, which the SDK kit converts as it converts the local
/// provider's (`-32602` for invalid params, else `-32002` with the message).
#[paperclip_sandbox_sdk::provider(delegate = LocalDriver<BwrapConfig>)]
impl SandboxProvider for BwrapProvider {
    type Backend = LocalBackend<BwrapSetting>;

    async fn connect(&self, config: &BwrapConfig) -> Result<LocalBackend<BwrapSetting>> {
        Connect::connect(&self.local, config).await
    }

    /// The local provider's probe, after re-probing the prerequisites; the mode goes in the
    /// summary, a diagnostic and `metadata` (`{bwrapMode, reason, bwrapSetting, launcher?,
    /// checks}`). A plain mode is a warning, never a failure.
    async fn probe(
        &self,
        params: ProbeParams<BwrapConfig>,
        local: &LocalBackend<BwrapSetting>,
        cx: Context,
    ) -> HookResult<ProbeResult> {
        let setting = *local.extra();
        let mut result = SandboxProvider::probe(&self.local, params, cx).await?;
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

    /// The local provider's execute, wrapped when the mode is `bwrap`; a wrapped run that
    /// failed to start is run again plainly and degrades the mode. The result's `metadata`
    /// says which mode ran (`bwrapMode`, `bwrapReason` when plain). Output streams as
    /// `execute.log`, held back until the command, not bwrap, runs.
    async fn execute(
        &self,
        params: ExecuteParams<BwrapConfig>,
        local: &LocalBackend<BwrapSetting>,
        cx: Context,
    ) -> Result<ExecuteResult> {
        let mode = self.mode_for(*local.extra());
        self.local.remember_lease(params.lease.provider_lease_id.as_deref(), local);
        // A missing, stopped or expired lease is refused as the local provider refuses it.
        let dir = local.store()?.active_dir(params.lease.required_id()?)?;
        let token = cx.cancellation().clone();
        let mut cancel = std::pin::pin!(async move { token.cancelled().await });
        let mut sink = &cx;
        let wrapper = match mode {
            Mode::Plain(reason) => {
                let out = self.run(&dir, ExecRequest::from(&params), &mut sink, cancel).await?;
                return Ok(with_mode(out, "plain", Some(&reason)));
            }
            Mode::Bwrap(w) => w,
        };
        let lease =
            dir.canonicalize().map_err(|e| LocalError::io("resolve the lease directory", e))?;
        let tmp = lease.join(".tmp");
        let _ = std::fs::create_dir_all(&tmp);
        let marker = tmp.join(format!("{MARKER_PREFIX}{}", local_provider::random_hex(8)));
        let mut env = base_env(&lease);
        env.extend(params.env.clone().unwrap_or_default());
        let inv = wrapper.wrap(&lease, &marker, &env, &params.command, params.args());
        let mut wrapped = ExecRequest::from(&params);
        wrapped.command = inv.program;
        wrapped.args = inv.args;

        let mut gate = Gate {
            marker: &marker,
            started: false,
            held: Vec::new(),
            held_bytes: 0,
            sink: &mut sink,
        };
        let out = self.run(&dir, wrapped, &mut gate, cancel.as_mut()).await;
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
        tracing::warn!(reason = %why, "bwrap failed to start; running the command plainly");
        self.state().degraded = Some(why.clone());
        let reason = format!("degraded: bwrap failed to start ({why})");
        let plain = self.run(&dir, ExecRequest::from(&params), &mut sink, cancel).await?;
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
