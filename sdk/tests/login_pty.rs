//! A Rust provider offers login terminals through the SDK, end to end: `loginPtyOpen` starts
//! `sh` in the lease (a real process on pipes), `loginPtyInput` writes the host's raw text to
//! it, its output comes back as `loginPty.output` notifications and its end as one
//! `loginPty.exit` with the exit code; `loginPtyStop` ends the child and `loginPtyClose`,
//! keyed by the host route, ends whatever still runs.

mod common;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{forward_output, next_notification, SharedStdin};
use paperclip_sandbox_sdk::prelude::*;
use paperclip_sandbox_sdk::process::{kill_process_group, LocalCommand};
use paperclip_sandbox_sdk::protocol::jsonrpc::{Invocation, Notification};
use paperclip_sandbox_sdk::protocol::methods::{is_login_session_home, LoginCommandKey};
use paperclip_sandbox_sdk::testing::TestClient;
use serde_json::{json, Value};

/// A login terminal: its route, its process group and its input.
struct Terminal(String, u32, SharedStdin);

#[derive(Default)]
struct LoginProvider {
    /// The leases are the directories below it.
    root: PathBuf,
    /// Open terminals by worker session id.
    terminals: Mutex<HashMap<String, Terminal>>,
    /// Every terminal opened: its route and process group (shared with the test).
    opened: Arc<Mutex<Vec<(String, u32)>>>,
}

impl LoginProvider {
    fn session_of_route(&self, route: &str) -> Option<String> {
        let terminals = self.terminals.lock().unwrap();
        terminals.iter().find(|(_, t)| t.0 == route).map(|(s, _)| s.clone())
    }
}

#[provider]
impl SandboxProvider for LoginProvider {
    type Config = JsonObject;

    async fn login_pty_open(
        &self,
        params: LoginPtyOpenParams,
        cx: Context,
    ) -> HookResult<LoginPtyOpenResult> {
        if !is_login_session_home(&params.session_home) {
            return Err(ProviderError::invalid_params("sessionHome is not a login session home"));
        }
        // The worker maps the key to a fixed command of its own; this test's "login" is `sh`.
        let program = match params.login_command_key {
            LoginCommandKey::Claude | LoginCommandKey::Codex | LoginCommandKey::Grok => "sh",
            _ => return Err(ProviderError::invalid_params("unknown loginCommandKey")),
        };
        let lease = self.root.join(&params.provider_lease_id);
        if !lease.is_dir() {
            return Err(ProviderError::worker("no such lease"));
        }
        let mut cmd = LocalCommand::new(program);
        cmd.current_dir(lease).env("HOME", &params.session_home);
        let mut process = cmd.spawn_interactive()?;
        let session = format!("login-{}", params.host_route_id);
        let sender = cx.login_pty_sender(&params.host_route_id, &session);
        let stdin = SharedStdin::take(&mut process);
        let pgid = process.pgid();
        self.opened.lock().unwrap().push((params.host_route_id.clone(), pgid));
        let terminal = Terminal(params.host_route_id, pgid, stdin);
        self.terminals.lock().unwrap().insert(session.clone(), terminal);
        tokio::spawn(async move {
            let output = sender.clone();
            let ended = forward_output(process, |chunk| {
                let output = output.clone();
                async move { output.output(&String::from_utf8_lossy(&chunk)).await }
            })
            .await;
            sender.exit(ended.ok().and_then(|status| status.code()));
        });
        Ok(LoginPtyOpenResult::new(session))
    }

    async fn login_pty_input(&self, params: LoginPtyInputParams, _cx: Context) -> HookResult<()> {
        let stdin = {
            let terminals = self.terminals.lock().unwrap();
            let t = terminals
                .get(&params.worker_session_id)
                .ok_or_else(|| ProviderError::worker("no such login terminal"))?;
            t.2.clone()
        };
        stdin.write(params.data.as_bytes()).await
    }

    async fn login_pty_stop(&self, params: LoginPtyStopParams, _cx: Context) -> HookResult<()> {
        let terminals = self.terminals.lock().unwrap();
        let t = terminals
            .get(&params.worker_session_id)
            .ok_or_else(|| ProviderError::worker("no such login terminal"))?;
        kill_process_group(t.1)?;
        Ok(())
    }

    async fn login_pty_close(
        &self,
        params: LoginPtyCloseParams,
        _cx: Context,
    ) -> HookResult<LoginPtyCloseResult> {
        // Keyed by the route, never by the (informative) session id.
        if let Some(session) = self.session_of_route(&params.host_route_id) {
            if let Some(t) = self.terminals.lock().unwrap().remove(&session) {
                let _ = kill_process_group(t.1);
            }
        }
        Ok(LoginPtyCloseResult::new(params.host_route_id))
    }
}

const HOME: &str = "/tmp/paperclip-adapter-login/3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b";

fn open_params(route: &str) -> Value {
    json!({"hostRouteId": route, "driverKey": "login", "companyId": "c1", "environmentId": "e1",
           "providerLeaseId": "lease-1", "loginCommandKey": "claude", "sessionHome": HOME})
}

/// The next notification of `method` for `route`, skipping others.
async fn next_of(client: &TestClient, method: &str, route: &str) -> Notification {
    next_notification(client, |n| {
        n.method == method && n.params.as_ref().is_some_and(|p| p["hostRouteId"] == route)
    })
    .await
}

/// True once no process of group `pgid` is left (waits up to 10 s).
async fn group_gone(pgid: u32) -> bool {
    for _ in 0..500 {
        // SAFETY: `kill` with signal 0 only checks that the group exists.
        if unsafe { libc::kill(-(pgid as i32), 0) } != 0 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn a_login_terminal_runs_sh_in_the_lease_and_reports_its_output_and_exit() {
    let root = std::env::temp_dir().join(format!("pcsdk-login-{}", std::process::id()));
    let provider = LoginProvider { root: root.clone(), ..Default::default() };
    let opened = provider.opened.clone();
    let client = TestClient::new(provider);
    let init = client.call_raw("initialize", json!({})).await.unwrap();
    let advertised: Vec<String> = serde_json::from_value(init["supportedMethods"].clone()).unwrap();
    for m in ["loginPtyOpen", "loginPtyInput", "loginPtyStop", "loginPtyClose"] {
        assert!(advertised.iter().any(|a| a == m), "{m} in {advertised:?}");
    }
    std::fs::create_dir_all(root.join("lease-1")).unwrap();
    // A lease the provider does not have is refused.
    let mut unknown = open_params("route-0");
    unknown["providerLeaseId"] = json!("lease-9");
    let refused = client.call_raw("loginPtyOpen", unknown).await.unwrap_err();
    assert_eq!(refused.code, -32002, "{refused:?}");

    // A session home of another shape is refused before anything starts.
    let mut bad = open_params("route-0");
    bad["sessionHome"] = json!("/home/someone");
    let refused = client.call_raw("loginPtyOpen", bad).await.unwrap_err();
    assert_eq!(refused.code, -32602, "{refused:?}");
    assert!(opened.lock().unwrap().is_empty());

    // Opened inside an invocation: the output still carries no invocation id (it is bound
    // by the two stream ids).
    let invocation: Invocation =
        serde_json::from_value(json!({"id": "inv-1", "scope": {"companyId": "c1"}})).unwrap();
    let open = client.call_in("loginPtyOpen", open_params("route-1"), Some(invocation)).await;
    let session = open.unwrap()["workerSessionId"].as_str().unwrap().to_owned();
    let input = |data: &str| json!({"workerSessionId": session, "data": data});
    client.call_raw("loginPtyInput", input("echo hi\n")).await.unwrap();
    let output = next_of(&client, "loginPty.output", "route-1").await;
    assert_eq!(
        output.params.unwrap(),
        json!({"hostRouteId": "route-1", "workerSessionId": session, "chunk": "hi\n"})
    );
    assert_eq!(output.invocation_id, None);

    client.call_raw("loginPtyInput", input("exit 3\n")).await.unwrap();
    let exit = next_of(&client, "loginPty.exit", "route-1").await;
    assert_eq!(
        exit.params.unwrap(),
        json!({"hostRouteId": "route-1", "workerSessionId": session, "exitCode": 3})
    );
    let closed = client.call_raw("loginPtyClose", json!({"hostRouteId": "route-1"})).await.unwrap();
    assert_eq!(closed, json!({"hostRouteId": "route-1"}));
    // Input to a closed terminal is refused.
    let gone = client.call_raw("loginPtyInput", input("echo again\n")).await.unwrap_err();
    assert_eq!(gone.code, -32002);

    // loginPtyStop ends the child: the exit follows, without a code (killed by a signal).
    let second = client.call_raw("loginPtyOpen", open_params("route-2")).await.unwrap();
    let second = second["workerSessionId"].as_str().unwrap().to_owned();
    client.call_raw("loginPtyStop", json!({"workerSessionId": second})).await.unwrap();
    let exit = next_of(&client, "loginPty.exit", "route-2").await;
    assert_eq!(exit.params.unwrap()["exitCode"], Value::Null);
    client
        .call_raw("loginPtyClose", json!({"hostRouteId": "route-2", "workerSessionId": second}))
        .await
        .unwrap();

    // loginPtyClose, keyed by the route alone (the open answer may have been lost), ends a
    // terminal that still runs.
    client.call_raw("loginPtyOpen", open_params("route-3")).await.unwrap();
    let pgid = opened.lock().unwrap().iter().find(|(r, _)| r == "route-3").unwrap().1;
    assert!(!group_gone_now(pgid), "the third terminal runs");
    let closed = client.call_raw("loginPtyClose", json!({"hostRouteId": "route-3"})).await.unwrap();
    assert_eq!(closed, json!({"hostRouteId": "route-3"}));
    assert!(group_gone(pgid).await, "loginPtyClose ended the terminal's processes");
    let _ = std::fs::remove_dir_all(root);
}

/// True when no process of group `pgid` exists right now.
fn group_gone_now(pgid: u32) -> bool {
    // SAFETY: `kill` with signal 0 only checks that the group exists.
    unsafe { libc::kill(-(pgid as i32), 0) != 0 }
}
