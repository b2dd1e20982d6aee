//! Duplex channels (`duplexChannelOpen` / `Write` / `Stop` / `Close`): a live command in a
//! lease whose stdin the host writes and whose output streams back as
//! `duplexChannel.data`, ending with one `duplexChannel.exit`.
//!
//! A channel is registered under the host's route id and bound to a worker session id this
//! module mints. `write` and `stop` act only on the exact live pair; `close` keys on the route
//! alone (it must work after a lost open answer), ends the command's process group and
//! acknowledges even an unknown route. The open params carry no config, so the lease is
//! found through the store root its acquire (or resume, realize, execute) used in this worker
//! ([`DuplexChannels::remember_lease`]).
//!
//! The command runs in the lease directory with the lease's environment, in its own process
//! group, registered with the lease so its stop, release and destroy end it too; it dies with
//! the worker.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use paperclip_sandbox_protocol::methods::{
    DuplexChannelCloseParams, DuplexChannelCloseResult, DuplexChannelOpenParams,
    DuplexChannelOpenResult, DuplexChannelStopParams, DuplexChannelWriteParams,
};
use paperclip_sandbox_sdk::process::{kill_process_group, LocalCommand};
use paperclip_sandbox_sdk::DuplexSender;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::ChildStdin;
use tokio::sync::{watch, Mutex as AsyncMutex};

use crate::error::{ErrorKind, LocalError, Result};
use crate::exec::{base_env, ProcessGroups};
use crate::leases::LeaseStore;

struct Channel {
    worker_session_id: String,
    pgid: u32,
    ended: Arc<AtomicBool>,
    stdin: Arc<AsyncMutex<Option<ChildStdin>>>,
    lease: String,
    /// Dropped when the channel is closed (or its lease stopped): a write still waiting for
    /// the command to read ends then, answered, instead of waiting on.
    open: watch::Sender<()>,
}

/// The open duplex channels of a worker, and where its leases live.
#[derive(Clone, Default)]
pub struct DuplexChannels {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
struct Inner {
    channels: HashMap<String, Channel>,
    lease_roots: HashMap<String, PathBuf>,
}

impl std::fmt::Debug for DuplexChannels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DuplexChannels").field("open", &self.open_count()).finish()
    }
}

impl DuplexChannels {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records that lease `id` lives under the store `root`.
    pub fn remember_lease(&self, id: &str, root: &Path) {
        self.lock().lease_roots.insert(id.to_owned(), root.to_path_buf());
    }

    /// The number of open channels.
    pub fn open_count(&self) -> usize {
        self.lock().channels.len()
    }

    /// The number of open channels whose command still runs.
    pub fn running_count(&self) -> usize {
        self.lock().channels.values().filter(|c| !c.ended.load(Ordering::SeqCst)).count()
    }

    /// Opens a channel: runs `command` in the lease and streams its output through `sender`
    /// (built for the route and the session id this returns, see [`Self::new_session_id`]).
    pub async fn open(
        &self,
        params: &DuplexChannelOpenParams,
        worker_session_id: String,
        groups: &ProcessGroups,
        sender: DuplexSender,
    ) -> Result<DuplexChannelOpenResult> {
        let Some((program, args)) = params.command.split_first() else {
            return Err(LocalError::invalid("command must name a program"));
        };
        let root =
            self.lock().lease_roots.get(&params.provider_lease_id).cloned().ok_or_else(|| {
                LocalError::new(
                    ErrorKind::NotFound,
                    format!(
                        "lease {} is not known to this worker; acquire or resume it first",
                        params.provider_lease_id
                    ),
                )
            })?;
        let store = LeaseStore::open(&root, groups.clone())?;
        let dir = store.active_dir(&params.provider_lease_id)?;
        let dir = dir.canonicalize().map_err(|e| LocalError::io("resolve the lease", e))?;
        if self.lock().channels.contains_key(&params.host_route_id) {
            return Err(LocalError::invalid("a channel is already open on this hostRouteId"));
        }
        let mut cmd = LocalCommand::new(program);
        cmd.args(args).current_dir(&dir).env_clear().envs(base_env(&dir));
        let mut process =
            cmd.spawn_interactive().map_err(|e| LocalError::io(format!("start {program:?}"), e))?;
        let pgid = process.pgid();
        groups.register(&dir, pgid);
        let stdin = Arc::new(AsyncMutex::new(process.take_stdin()));
        let (stdout, stderr) = (process.take_stdout(), process.take_stderr());
        let ended = Arc::new(AtomicBool::new(false));
        self.lock().channels.insert(
            params.host_route_id.clone(),
            Channel {
                worker_session_id: worker_session_id.clone(),
                pgid,
                ended: ended.clone(),
                stdin: stdin.clone(),
                lease: params.provider_lease_id.clone(),
                open: watch::Sender::new(()),
            },
        );
        let route = params.host_route_id.clone();
        tokio::spawn(async move {
            // Both output streams go to the channel, in arrival order per stream.
            let out = forward(stdout, sender.clone());
            let err = forward(stderr, sender.clone());
            tokio::join!(out, err);
            let status = process.wait().await;
            stdin.lock().await.take();
            ended.store(true, Ordering::SeqCst);
            match status {
                Ok(s) => sender.exit(s.code()),
                Err(_) => sender.transport_closed(),
            }
            tracing::debug!(route, "duplex channel command ended");
        });
        Ok(DuplexChannelOpenResult::new(&params.host_route_id, worker_session_id))
    }

    /// Writes to the command's stdin; only the exact live pair. A write the command does not
    /// read waits (the SDK queues the channel's later writes behind it, bounded), and ends
    /// with an error once the channel is closed or its lease stopped.
    pub async fn write(&self, params: &DuplexChannelWriteParams) -> Result<()> {
        let (stdin, mut open) = {
            let inner = self.lock();
            let channel = exact(&inner, &params.host_route_id, &params.worker_session_id)?;
            (channel.stdin.clone(), channel.open.subscribe())
        };
        let closed = || LocalError::new(ErrorKind::NotFound, "the channel was closed");
        let write = async {
            let mut guard = stdin.lock().await;
            let Some(pipe) = guard.as_mut() else {
                return Err(LocalError::new(
                    ErrorKind::NotFound,
                    "the channel's command has ended",
                ));
            };
            pipe.write_all(params.data.as_bytes())
                .await
                .and(pipe.flush().await)
                .map_err(|e| LocalError::io("write to the channel", e))
        };
        tokio::select! {
            written = write => written,
            // `changed` fails once the channel's sender is dropped: the channel closed.
            _ = open.changed() => Err(closed()),
        }
    }

    /// Ends the command (its whole process group); only the exact live pair.
    pub fn stop(&self, params: &DuplexChannelStopParams) -> Result<()> {
        let inner = self.lock();
        let channel = exact(&inner, &params.host_route_id, &params.worker_session_id)?;
        let _ = kill_process_group(channel.pgid);
        Ok(())
    }

    /// Closes the channel of the route: ends its command and forgets it. An unknown route is
    /// acknowledged without a session id.
    pub fn close(&self, params: &DuplexChannelCloseParams) -> DuplexChannelCloseResult {
        let removed = self.lock().channels.remove(&params.host_route_id);
        let bound = removed.map(|c| {
            let _ = kill_process_group(c.pgid);
            c.worker_session_id
        });
        DuplexChannelCloseResult::new(&params.host_route_id, bound)
    }

    /// Closes every channel of lease `id` (it is being stopped or destroyed).
    pub fn close_lease(&self, id: &str) {
        let mut inner = self.lock();
        inner.channels.retain(|_, c| {
            let keep = c.lease != id;
            if !keep {
                let _ = kill_process_group(c.pgid);
            }
            keep
        });
    }

    /// Closes every channel (the worker shuts down).
    pub fn close_all(&self) {
        for (_, c) in self.lock().channels.drain() {
            let _ = kill_process_group(c.pgid);
        }
    }

    /// A fresh worker session id.
    pub fn new_session_id() -> String {
        format!("dc-{}", crate::random_hex(8))
    }
}

fn exact<'a>(inner: &'a Inner, route: &str, session: &str) -> Result<&'a Channel> {
    inner.channels.get(route).filter(|c| c.worker_session_id == session).ok_or_else(|| {
        LocalError::new(ErrorKind::NotFound, "no open channel for this route and session")
    })
}

async fn forward(stream: Option<impl AsyncRead + Unpin>, sender: DuplexSender) {
    let Some(mut stream) = stream else { return };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => sender.data(&buf[..n]).await,
        }
    }
}
