use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use paperclip_sandbox_protocol::methods::{
    self, ChannelBytes, DuplexChannelDataParams, DuplexChannelExitParams, LoginPtyExitParams,
    LoginPtyOutputParams, RpcNotification,
};

use crate::context::Context;
use crate::runtime::peer::Peer;

/// What both senders share: the peer, the stream's two ids and whether the exit was sent.
#[derive(Clone)]
struct Stream {
    peer: Arc<Peer>,
    host_route_id: Arc<str>,
    worker_session_id: Arc<str>,
    exited: Arc<AtomicBool>,
}

impl Stream {
    fn new(cx: &Context, host_route_id: String, worker_session_id: String) -> Stream {
        Stream {
            peer: cx.peer().clone(),
            host_route_id: host_route_id.into(),
            worker_session_id: worker_session_id.into(),
            exited: Arc::default(),
        }
    }

    /// Sends an output notification, waiting while the output queue is full; an empty chunk
    /// is not sent.
    async fn output<N: RpcNotification>(
        &self,
        empty: bool,
        params: impl FnOnce(&str, &str) -> N::Params,
    ) {
        if empty {
            return;
        }
        self.peer.sink().wait_for_room().await;
        self.send::<N>(params);
    }

    /// Sends the exit notification; only the first exit sends.
    fn exit<N: RpcNotification>(&self, params: impl FnOnce(&str, &str) -> N::Params) {
        if !self.exited.swap(true, Ordering::SeqCst) {
            self.send::<N>(params);
        }
    }

    fn send<N: RpcNotification>(&self, params: impl FnOnce(&str, &str) -> N::Params) {
        let params = params(&self.host_route_id, &self.worker_session_id);
        match serde_json::to_value(&params) {
            Ok(v) => self.peer.notify(N::NAME, Some(v), None),
            Err(e) => tracing::error!(method = N::NAME, error = %e, "notification not sent"),
        }
    }
}

/// Declares a sender over a [`Stream`]: the type and its `Debug` (the two ids).
macro_rules! sender {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $name {
            stream: Stream,
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("host_route_id", &self.stream.host_route_id)
                    .field("worker_session_id", &self.stream.worker_session_id)
                    .finish_non_exhaustive()
            }
        }
    };
}

sender! {
    /// Sends the output and the exit of one login terminal (`loginPty.output`,
    /// `loginPty.exit`).
    ///
    /// A stream's output outlives the request that opened it: the open hook starts the command,
    /// answers `{workerSessionId}` and keeps a sender, from which a task of its own forwards the
    /// command's output to the host as `loginPty.output` / `duplexChannel.data` notifications and,
    /// once, the exit as `loginPty.exit` / `duplexChannel.exit`. Get a sender from the open hook's
    /// [`Context`] with [`Context::login_pty_sender`] or [`Context::duplex_channel_sender`]; it is
    /// `Clone + Send + 'static`, so move it into the task.
    ///
    /// As in the upstream SDK, these notifications carry no invocation id (they are bound by the
    /// stream's two ids, not by the call that opened it), empty chunks are not sent, and a
    /// duplex chunk travels as base64 ([`ChannelBytes`]). Output chunks are never dropped: the
    /// `async` senders wait while the worker's output queue is full (the host is not reading), so
    /// a reader task that awaits them stops reading its command, which then blocks on its pipe and
    /// memory stays bounded. After the worker's output closes, sends return at once and are
    /// dropped.
    LoginPtySender
}

sender! {
    /// Sends the output and the exit of one duplex channel (`duplexChannel.data`,
    /// `duplexChannel.exit`). Works as a [`LoginPtySender`] does (see there); the chunks
    /// travel as base64 ([`ChannelBytes`]).
    DuplexSender
}

impl LoginPtySender {
    /// The route this sender reports to.
    pub fn host_route_id(&self) -> &str {
        &self.stream.host_route_id
    }

    /// The session id this sender binds its output to.
    pub fn worker_session_id(&self) -> &str {
        &self.stream.worker_session_id
    }

    /// Sends one chunk of terminal output; an empty chunk is not sent. Waits while the
    /// output queue is full.
    pub async fn output(&self, chunk: &str) {
        let params = |route: &str, session: &str| LoginPtyOutputParams::new(route, session, chunk);
        self.stream.output::<methods::LoginPtyOutput>(chunk.is_empty(), params).await;
    }

    /// Sends the terminal's exit (`None`: ended without a code). Only the first call sends.
    pub fn exit(&self, exit_code: Option<i32>) {
        self.stream.exit::<methods::LoginPtyExit>(|route, session| {
            LoginPtyExitParams::new(route, session, exit_code)
        });
    }
}

impl DuplexSender {
    /// The route this sender reports to.
    pub fn host_route_id(&self) -> &str {
        &self.stream.host_route_id
    }

    /// The session id this sender binds its output to.
    pub fn worker_session_id(&self) -> &str {
        &self.stream.worker_session_id
    }

    /// Sends one chunk of output bytes (as base64); an empty chunk is not sent. Waits while
    /// the output queue is full.
    pub async fn data(&self, chunk: &[u8]) {
        let params = |route: &str, session: &str| {
            DuplexChannelDataParams::new(route, session, ChannelBytes::from(chunk))
        };
        self.stream.output::<methods::DuplexChannelData>(chunk.is_empty(), params).await;
    }

    /// Sends the command's exit (`None`: ended without a code). Only the first exit (or
    /// [`transport_closed`](Self::transport_closed)) sends.
    pub fn exit(&self, exit_code: Option<i32>) {
        self.send_exit(exit_code, false);
    }

    /// Reports that the transport to the command closed without exit data (not a process
    /// exit). Only the first exit sends.
    pub fn transport_closed(&self) {
        self.send_exit(None, true);
    }

    fn send_exit(&self, exit_code: Option<i32>, transport_closed: bool) {
        self.stream.exit::<methods::DuplexChannelExit>(|route, session| {
            DuplexChannelExitParams::new(route, session, exit_code, transport_closed)
        });
    }
}

impl Context {
    /// A sender for the login terminal registered under `host_route_id` (the open's id) and
    /// bound to `worker_session_id` (the id the open hook answers).
    pub fn login_pty_sender(
        &self,
        host_route_id: impl Into<String>,
        worker_session_id: impl Into<String>,
    ) -> LoginPtySender {
        LoginPtySender { stream: Stream::new(self, host_route_id.into(), worker_session_id.into()) }
    }

    /// A sender for the duplex channel registered under `host_route_id` (the open's id) and
    /// bound to `worker_session_id` (the id the open hook answers).
    pub fn duplex_channel_sender(
        &self,
        host_route_id: impl Into<String>,
        worker_session_id: impl Into<String>,
    ) -> DuplexSender {
        DuplexSender { stream: Stream::new(self, host_route_id.into(), worker_session_id.into()) }
    }
}
