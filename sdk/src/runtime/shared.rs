//! What the runtime shares between the reader, the request tasks and the notification task,
//! and the [`Handler`] it drives.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use async_trait::async_trait;
use paperclip_sandbox_protocol::error_code::ErrorCode;
use paperclip_sandbox_protocol::jsonrpc::ErrorObject;
use paperclip_sandbox_protocol::methods::Method;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::sync::{watch, Semaphore};

use super::codec::FrameSink;
use super::flow::{Budget, Streams};
use super::peer::Peer;
use super::result_json::ResultJson;
use crate::context::{CancellationSource, Context};
use crate::idle::IdleGate;

/// The object-safe interface the runtime drives; [`SandboxProvider`](crate::SandboxProvider)'s
/// adapter is its one implementation.
#[async_trait]
pub(crate) trait Handler: Send + Sync + 'static {
    /// The wire names of the hooks implemented. Only these are called; they (minus
    /// `initialize`, plus `releaseIdleSleep` with `prepareIdleSleep`) are the
    /// `supportedMethods` of the handshake.
    fn implemented_methods(&self) -> &'static [&'static str];

    /// Serves one listed host→worker request from its raw params, answering its result as
    /// serialized JSON.
    async fn call(
        &self,
        method: Method,
        params: Option<&RawValue>,
        cx: Context,
    ) -> Result<ResultJson, ErrorObject>;

    /// Handles one host→worker notification (unknown ones are ignored), one at a time, in
    /// arrival order.
    async fn notify(&self, method: &str, params: Option<Value>, cx: Context);
}

/// The state of one serve loop.
pub(crate) struct Shared {
    pub handler: Arc<dyn Handler>,
    pub sink: FrameSink,
    pub peer: Arc<Peer>,
    pub cancel: CancellationSource,
    pub permits: Arc<Semaphore>,
    /// The worker-wide bound on pending request bytes.
    pub budget: Budget,
    /// The input queues of byte streams.
    pub streams: Streams,
    pub initialized: AtomicBool,
    /// Admission and the idle-sleep seal (see [`crate::idle`]).
    pub idle: Arc<IdleGate>,
    /// Set (after the shutdown answer is flushed) to stop the reader.
    pub stop: watch::Sender<bool>,
}

impl Shared {
    /// True when the handler lists `method`.
    pub fn implements(&self, method: Method) -> bool {
        self.handler.implemented_methods().contains(&method.as_str())
    }

    /// A context for a hook the runtime calls on its own (the `shutdown` hook when a signal,
    /// stdin EOF or a closed stdout ends the worker): no request id, no invocation.
    pub fn runtime_context(&self, method: Method) -> Context {
        Context::new(
            std::borrow::Cow::Borrowed(method.as_str()),
            None,
            None,
            None,
            self.cancel.token(),
            self.peer.clone(),
        )
    }

    /// Calls a listed hook, turning a panic into `-32603`.
    pub async fn call_hook(
        &self,
        method: Method,
        params: Option<&RawValue>,
        cx: Context,
    ) -> Result<ResultJson, ErrorObject> {
        match CatchUnwind(self.handler.call(method, params, cx)).await {
            Ok(answer) => answer,
            Err(payload) => {
                // The payload is not sent: it may quote data the provider holds (configs carry
                // resolved secrets). The default panic hook still prints it to stderr.
                drop(payload);
                tracing::error!(method = method.as_str(), "hook panicked; answering -32603");
                Err(ErrorObject::new(
                    ErrorCode::InternalError,
                    format!("Internal error: the {method} handler panicked"),
                ))
            }
        }
    }
}

/// A future that turns a panic while polling the inner future into `Err(payload)`.
pub(crate) struct CatchUnwind<F>(pub F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let inner = Pin::new(&mut self.0);
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn catch_unwind_reports_panics_and_passes_values() {
        let ok = CatchUnwind(Box::pin(async { 7 })).await;
        assert_eq!(ok.ok(), Some(7));
        let boom = CatchUnwind(Box::pin(async {
            tokio::task::yield_now().await;
            panic!("secret-in-panic")
        }))
        .await;
        assert!(boom.is_err());
    }
}
