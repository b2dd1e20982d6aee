//! Bodies of the fuzz targets (in the repository's `fuzz/` folder), shared with the tests that
//! replay their kept corpus on stable Rust.
//!
//! [`serve_bytes`] feeds arbitrary bytes to the real runtime (frame codec, parse paths,
//! dispatch, typed params) as a worker's stdin and checks what a host relies on: the worker
//! ends, and every line it writes is one JSON-RPC 2.0 object. A violation panics.

use std::time::Duration;

use std::sync::Arc;

use async_trait::async_trait;
use paperclip_sandbox_protocol::jsonrpc::{replace_lone_surrogate_escapes, ErrorObject};
use paperclip_sandbox_protocol::methods::{
    name, ExecuteParams, ExecuteResult, Method, OutputStream, ProbeParams, ProbeResult, SyncParams,
    ValidateConfigParams, ValidateConfigResult,
};
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::io::AsyncReadExt;

use crate::context::Context;
use crate::error::params_from_value;
use crate::runtime::serve::{serve, RuntimeConfig};
use crate::runtime::shared::Handler;

/// A handler with a few typed hooks that answer at once (no I/O).
struct Typed;

/// What a handler answers: the result's JSON, or the error.
type Answer = Result<crate::runtime::ResultJson, ErrorObject>;

fn answer<T: serde::Serialize>(value: T) -> Answer {
    serde_json::value::to_raw_value(&value)
        .map(Into::into)
        .map_err(|e| ErrorObject::new(-32603, e.to_string()))
}

#[async_trait]
impl Handler for Typed {
    fn implemented_methods(&self) -> &'static [&'static str] {
        &[
            name::ENVIRONMENT_VALIDATE_CONFIG,
            name::ENVIRONMENT_PROBE,
            name::ENVIRONMENT_EXECUTE,
            name::ENVIRONMENT_SYNC_IN,
        ]
    }

    async fn call(&self, method: Method, params: Option<&RawValue>, cx: Context) -> Answer {
        let params: Value = match params {
            Some(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
            None => Value::Null,
        };
        match method {
            Method::EnvironmentValidateConfig => {
                let _: ValidateConfigParams = params_from_value(params)?;
                answer(ValidateConfigResult::valid())
            }
            Method::EnvironmentProbe => {
                let _: ProbeParams = params_from_value(params)?;
                answer(ProbeResult::new(true))
            }
            Method::EnvironmentExecute => {
                let p: ExecuteParams = params_from_value(params)?;
                cx.execute_log(OutputStream::Stdout, &p.command);
                answer(ExecuteResult::exited(0).with_stdout(p.command))
            }
            Method::EnvironmentSyncIn => {
                let p: SyncParams = params_from_value(params)?;
                answer(p.operations.len())
            }
            _ => answer(Value::Null),
        }
    }

    async fn notify(&self, _method: &str, _params: Option<Value>, _cx: Context) {}
}

/// Serves `input` as the whole of a worker's stdin and returns the lines it wrote, after
/// checking each is a JSON-RPC 2.0 object (lone surrogate escapes allowed, as JavaScript
/// allows them). Panics on a violation or when the worker does not end.
pub fn serve_bytes(input: &[u8]) -> Vec<String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let (out_tx, mut out_rx) = tokio::io::duplex(1 << 16);
        let config = RuntimeConfig {
            frame_limit: 64 * 1024,
            shutdown_grace: Duration::from_millis(200),
            ..RuntimeConfig::default()
        };
        let reader = async {
            let mut all = Vec::new();
            out_rx.read_to_end(&mut all).await.expect("read the output");
            all
        };
        let serve = serve(Arc::new(Typed), config, input, out_tx);
        let (served, output) =
            tokio::time::timeout(Duration::from_secs(20), async { tokio::join!(serve, reader) })
                .await
                .expect("the worker ends");
        served.expect("serving ends cleanly");
        let text = String::from_utf8(output).expect("the output is UTF-8");
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        for line in &lines {
            let fixed = replace_lone_surrogate_escapes(line);
            let value: Value = serde_json::from_str(fixed.as_deref().unwrap_or(line))
                .unwrap_or_else(|e| panic!("output line is not JSON ({e}): {line}"));
            assert_eq!(value.get("jsonrpc"), Some(&Value::from("2.0")), "{line}");
        }
        lines
    })
}

/// Validates `input` (when it is JSON) as a manifest for every host profile; panics only if
/// the validator does (it must answer every value with a report).
pub fn validate_manifest_bytes(input: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(input) else { return };
    for profile in paperclip_sandbox_protocol::HostProfile::ALL {
        let report = paperclip_sandbox_protocol::manifest::validate(&value, profile);
        assert_eq!(report.valid, report.errors.is_empty(), "{report:?}");
    }
}
