//! What the byte-stream tests (`duplex_channel`, `login_pty`) share: a command's stdin that
//! two hooks use, the loop that forwards its output, and waiting for one notification.

use std::future::Future;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use paperclip_sandbox_sdk::process::InteractiveProcess;
use paperclip_sandbox_sdk::protocol::jsonrpc::Notification;
use paperclip_sandbox_sdk::testing::TestClient;
use paperclip_sandbox_sdk::{HookResult, ProviderError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::ChildStdin;

/// The stdin of a running command, shared by the hook that writes to it and the open map.
#[derive(Clone)]
pub struct SharedStdin(Arc<tokio::sync::Mutex<Option<ChildStdin>>>);

impl SharedStdin {
    /// Takes `process`'s stdin.
    pub fn take(process: &mut InteractiveProcess) -> Self {
        SharedStdin(Arc::new(tokio::sync::Mutex::new(process.take_stdin())))
    }

    /// Writes `bytes` and flushes; an error once the stdin is gone.
    pub async fn write(&self, bytes: &[u8]) -> HookResult<()> {
        let mut stdin = self.0.lock().await;
        let pipe = stdin.as_mut().ok_or_else(|| ProviderError::worker("input closed"))?;
        pipe.write_all(bytes).await?;
        pipe.flush().await?;
        Ok(())
    }
}

/// Reads `process`'s stdout to its end, handing each chunk to `chunk`, then waits for the
/// process and returns how it ended.
pub async fn forward_output<F, Fut>(
    mut process: InteractiveProcess,
    mut chunk: F,
) -> std::io::Result<ExitStatus>
where
    F: FnMut(Vec<u8>) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut stdout = process.take_stdout().expect("piped stdout");
    let mut buf = [0u8; 4096];
    while let Ok(n @ 1..) = stdout.read(&mut buf).await {
        chunk(buf[..n].to_vec()).await;
    }
    process.wait().await
}

/// The next notification for which `wanted` holds, skipping others (a 5-minute hang guard).
pub async fn next_notification(
    client: &TestClient,
    wanted: impl Fn(&Notification) -> bool,
) -> Notification {
    loop {
        let note = tokio::time::timeout(Duration::from_secs(300), client.next_notification())
            .await
            .expect("a notification in time")
            .expect("the worker is alive");
        if wanted(&note) {
            return note;
        }
    }
}
