//! Senders for the output of interactive byte streams: login terminals and duplex channels.
//!
//! A stream's output outlives the request that opened it: the open hook starts the command,
//! answers `{workerSessionId}` and keeps a sender, from which a task of its own forwards the
//! command's output to the host as `loginPty.output` / `duplexChannel.data` notifications and,
//! once, the exit as `loginPty.exit` / `duplexChannel.exit`. Get a sender from the open hook's
//! [`Context`] with [`Context::login_pty_sender`] or [`Context::duplex_channel_sender`]; it is
//! `Clone + Send + 'static`, so move it into the task.
//!
//! As in the upstream SDK, these notifications carry no invocation id (they are bound by the
//! stream's two ids, not by the call that opened it), empty chunks are not sent, and a
//! duplex chunk travels as base64 ([`ChannelBytes`]). Output chunks are never dropped: the
//! `async` senders wait while the worker's output queue is full (the host is not reading), so
//! a reader task that awaits them stops reading its command, which then blocks on its pipe and
//! memory stays bounded. After the worker's output closes, sends return at once and are
//! dropped.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use paperclip_sandbox_protocol::methods::{
    self, ChannelBytes, DuplexChannelDataParams, DuplexChannelExitParams, LoginPtyExitParams,
    LoginPtyOutputParams, RpcNotification,
};

use crate::context::Context;
use crate::runtime::peer::Peer;

fn send<N: RpcNotification>(peer: &Peer, params: &N::Params) {
    match serde_json::to_value(params) {
        Ok(v) => peer.notify(N::NAME, Some(v), None),
        Err(e) => tracing::error!(method = N::NAME, error = %e, "notification not sent"),
    }
}

/// Sends the output and the exit of one login terminal (`loginPty.output`, `loginPty.exit`).
#[derive(Clone)]
pub struct LoginPtySender {
    peer: Arc<Peer>,
    host_route_id: Arc<str>,
    worker_session_id: Arc<str>,
    exited: Arc<AtomicBool>,
}

impl fmt::Debug for LoginPtySender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoginPtySender")
            .field("host_route_id", &self.host_route_id)
            .field("worker_session_id", &self.worker_session_id)
            .finish_non_exhaustive()
    }
}

impl LoginPtySender {
    /// The route this sender reports to.
    pub fn host_route_id(&self) -> &str {
        &self.host_route_id
    }

    /// The session id this sender binds its output to.
    pub fn worker_session_id(&self) -> &str {
        &self.worker_session_id
    }

    /// Sends one chunk of terminal output; an empty chunk is not sent. Waits while the
    /// output queue is full.
    pub async fn output(&self, chunk: &str) {
        if chunk.is_empty() {
            return;
        }
        self.peer.sink().wait_for_room().await;
        send::<methods::LoginPtyOutput>(
            &self.peer,
            &LoginPtyOutputParams::new(&*self.host_route_id, &*self.worker_session_id, chunk),
        );
    }

    /// Sends the terminal's exit (`None`: ended without a code). Only the first call sends.
    pub fn exit(&self, exit_code: Option<i32>) {
        if self.exited.swap(true, Ordering::SeqCst) {
            return;
        }
        send::<methods::LoginPtyExit>(
            &self.peer,
            &LoginPtyExitParams::new(&*self.host_route_id, &*self.worker_session_id, exit_code),
        );
    }
}

/// Sends the output and the exit of one duplex channel (`duplexChannel.data`,
/// `duplexChannel.exit`).
#[derive(Clone)]
pub struct DuplexSender {
    peer: Arc<Peer>,
    host_route_id: Arc<str>,
    worker_session_id: Arc<str>,
    exited: Arc<AtomicBool>,
}

impl fmt::Debug for DuplexSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DuplexSender")
            .field("host_route_id", &self.host_route_id)
            .field("worker_session_id", &self.worker_session_id)
            .finish_non_exhaustive()
    }
}

impl DuplexSender {
    /// The route this sender reports to.
    pub fn host_route_id(&self) -> &str {
        &self.host_route_id
    }

    /// The session id this sender binds its output to.
    pub fn worker_session_id(&self) -> &str {
        &self.worker_session_id
    }

    /// Sends one chunk of output bytes (as base64); an empty chunk is not sent. Waits while
    /// the output queue is full.
    pub async fn data(&self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        self.peer.sink().wait_for_room().await;
        send::<methods::DuplexChannelData>(
            &self.peer,
            &DuplexChannelDataParams::new(
                &*self.host_route_id,
                &*self.worker_session_id,
                ChannelBytes::from(chunk),
            ),
        );
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
        if self.exited.swap(true, Ordering::SeqCst) {
            return;
        }
        send::<methods::DuplexChannelExit>(
            &self.peer,
            &DuplexChannelExitParams::new(
                &*self.host_route_id,
                &*self.worker_session_id,
                exit_code,
                transport_closed,
            ),
        );
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
        LoginPtySender {
            peer: self.peer().clone(),
            host_route_id: host_route_id.into().into(),
            worker_session_id: worker_session_id.into().into(),
            exited: Arc::default(),
        }
    }

    /// A sender for the duplex channel registered under `host_route_id` (the open's id) and
    /// bound to `worker_session_id` (the id the open hook answers).
    pub fn duplex_channel_sender(
        &self,
        host_route_id: impl Into<String>,
        worker_session_id: impl Into<String>,
    ) -> DuplexSender {
        DuplexSender {
            peer: self.peer().clone(),
            host_route_id: host_route_id.into().into(),
            worker_session_id: worker_session_id.into().into(),
            exited: Arc::default(),
        }
    }
}
