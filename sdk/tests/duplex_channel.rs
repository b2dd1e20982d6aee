//! A Rust provider offers a duplex channel through the SDK: `sh` runs in the lease, the host
//! writes `echo hi\n` and `exit\n` as base64 and receives `hi` and the exit as
//! `duplexChannel.data` / `duplexChannel.exit` notifications (real process, real pipes).

mod common;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use common::{forward_output, next_notification, SharedStdin};
use paperclip_sandbox_sdk::prelude::*;
use paperclip_sandbox_sdk::process::LocalCommand;
use paperclip_sandbox_sdk::protocol::methods::ChannelBytes;
use paperclip_sandbox_sdk::testing::TestClient;
use serde_json::json;

struct Channel {
    session: String,
    pgid: u32,
    stdin: SharedStdin,
}

#[derive(Default)]
struct ShellProvider {
    root: PathBuf,
    channels: Mutex<HashMap<String, Channel>>,
}

#[provider]
impl SandboxProvider for ShellProvider {
    type Config = JsonObject;
    async fn acquire_lease(
        &self,
        params: AcquireLeaseParams,
        _cx: Context,
    ) -> HookResult<AcquireLeaseResult> {
        let dir = self.root.join(&params.run_id);
        std::fs::create_dir_all(&dir)?;
        Ok(Lease::new(params.run_id))
    }

    async fn duplex_channel_open(
        &self,
        params: DuplexChannelOpenParams,
        cx: Context,
    ) -> HookResult<DuplexChannelOpenResult> {
        let Some((program, args)) = params.command.split_first() else {
            return Err(ProviderError::invalid_params("command is empty"));
        };
        let mut cmd = LocalCommand::new(program);
        cmd.args(args).current_dir(self.root.join(&params.provider_lease_id));
        let mut process = cmd.spawn_interactive()?;
        let session = format!("s-{}", params.host_route_id);
        let sender = cx.duplex_channel_sender(&params.host_route_id, &session);
        let stdin = SharedStdin::take(&mut process);
        self.channels.lock().unwrap().insert(
            params.host_route_id.clone(),
            Channel { session: session.clone(), pgid: process.pgid(), stdin },
        );
        tokio::spawn(async move {
            let data = sender.clone();
            let ended = forward_output(process, |chunk| {
                let data = data.clone();
                async move { data.data(&chunk).await }
            })
            .await;
            match ended {
                Ok(status) => sender.exit(status.code()),
                Err(_) => sender.transport_closed(),
            }
        });
        Ok(DuplexChannelOpenResult::new(params.host_route_id, session))
    }

    async fn duplex_channel_write(
        &self,
        params: DuplexChannelWriteParams,
        _cx: Context,
    ) -> HookResult<()> {
        let stdin = {
            let channels = self.channels.lock().unwrap();
            let c = channels
                .get(&params.host_route_id)
                .filter(|c| c.session == params.worker_session_id)
                .ok_or_else(|| ProviderError::worker("no such channel"))?;
            c.stdin.clone()
        };
        stdin.write(params.data.as_bytes()).await
    }

    async fn duplex_channel_close(
        &self,
        params: DuplexChannelCloseParams,
        _cx: Context,
    ) -> HookResult<DuplexChannelCloseResult> {
        let removed = self.channels.lock().unwrap().remove(&params.host_route_id);
        let session = removed.map(|c| {
            let _ = paperclip_sandbox_sdk::process::kill_process_group(c.pgid);
            c.session
        });
        Ok(DuplexChannelCloseResult::new(params.host_route_id, session))
    }
}

fn base(extra: serde_json::Value) -> serde_json::Value {
    let mut v =
        json!({"driverKey": "shell", "companyId": "c1", "environmentId": "e1", "config": {}});
    v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    v
}

/// The params of the next notification of `method`, skipping others.
async fn next_of(client: &TestClient, method: &str) -> serde_json::Value {
    next_notification(client, |n| n.method == method).await.params.unwrap_or_default()
}

#[tokio::test]
async fn sh_in_the_lease_echoes_and_exits_through_the_duplex_channel() {
    let root = std::env::temp_dir().join(format!("pcsdk-duplex-{}", std::process::id()));
    let client = TestClient::new(ShellProvider { root: root.clone(), ..Default::default() });
    let init = client.call_raw("initialize", json!({})).await.unwrap();
    let advertised: Vec<String> = serde_json::from_value(init["supportedMethods"].clone()).unwrap();
    for m in ["duplexChannelOpen", "duplexChannelWrite", "duplexChannelClose"] {
        assert!(advertised.iter().any(|a| a == m), "{m} in {advertised:?}");
    }
    assert!(!advertised.iter().any(|a| a == "duplexChannelStop"), "no hook, not advertised");
    let stop = client
        .call_raw("duplexChannelStop", json!({"hostRouteId": "r", "workerSessionId": "s"}))
        .await;
    assert_eq!(stop.unwrap_err().code, -32004);

    client.call_raw("environmentAcquireLease", base(json!({"runId": "lease-1"}))).await.unwrap();
    let opened = client
        .call_raw(
            "duplexChannelOpen",
            json!({"hostRouteId": "route-1", "driverKey": "shell", "companyId": "c1",
                   "environmentId": "e1", "providerLeaseId": "lease-1", "command": ["sh"]}),
        )
        .await
        .unwrap();
    assert_eq!(opened["hostRouteId"], "route-1");
    let session = opened["workerSessionId"].as_str().unwrap().to_owned();

    let write =
        |data: &str| json!({"hostRouteId": "route-1", "workerSessionId": session, "data": data});
    // "echo hi\n" in base64.
    client.call_raw("duplexChannelWrite", write("ZWNobyBoaQo=")).await.unwrap();
    let data = next_of(&client, "duplexChannel.data").await;
    assert_eq!(
        (data["hostRouteId"].as_str(), data["workerSessionId"].as_str()),
        (Some("route-1"), Some(&*session))
    );
    let chunk = ChannelBytes::decode(data["chunk"].as_str().unwrap()).expect("canonical base64");
    assert_eq!(chunk.as_bytes(), b"hi\n");

    // Malformed base64 is refused before the hook runs.
    let bad = client.call_raw("duplexChannelWrite", write("not base64!")).await.unwrap_err();
    assert_eq!(bad.code, -32602);

    // "exit\n" in base64: the shell exits with 0.
    client.call_raw("duplexChannelWrite", write("ZXhpdAo=")).await.unwrap();
    let exit = next_of(&client, "duplexChannel.exit").await;
    assert_eq!(
        exit,
        json!({"hostRouteId": "route-1", "workerSessionId": session, "exitCode": 0, "transportClosed": false})
    );

    let closed =
        client.call_raw("duplexChannelClose", json!({"hostRouteId": "route-1"})).await.unwrap();
    assert_eq!(closed, json!({"hostRouteId": "route-1", "workerSessionId": session}));
    let _ = std::fs::remove_dir_all(root);
}
