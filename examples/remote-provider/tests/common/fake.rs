//! A fake sandbox API: a real HTTP/1.1 server (hyper) on 127.0.0.1:0 with fault injection.
//!
//! Every sandbox has a timeline of states (offsets from when it was created or last acted
//! on); its state is the last entry whose offset has passed. Every request is recorded with
//! its headers, body and answer status.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::time::Instant;

/// The API key the fake accepts.
pub const API_KEY: &str = "sk-fake-4f1d2c9a7e3b8d60";

/// A state timeline: `(offset, state)`, offsets increasing.
pub type Timeline = Vec<(Duration, &'static str)>;

/// One state now.
pub fn now(state: &'static str) -> Timeline {
    vec![(Duration::ZERO, state)]
}

/// `first` now, `then` after `after`.
pub fn then(first: &'static str, after: Duration, then: &'static str) -> Timeline {
    vec![(Duration::ZERO, first), (after, then)]
}

/// Faults and behaviours of the fake.
#[derive(Debug, Clone)]
pub struct Faults {
    /// How long `POST /sandbox` hangs before answering (the sandbox exists from the start).
    pub create_delay: Duration,
    /// The status `POST /sandbox` answers after its delay.
    pub create_status: u16,
    /// The states of a created sandbox.
    pub create_timeline: Timeline,
    /// The states after `POST /recover`.
    pub recover_timeline: Timeline,
    /// The states after `POST /stop`.
    pub stop_timeline: Timeline,
    /// The states after `POST /start`.
    pub start_timeline: Timeline,
    /// `PATCH /autodelete` answers 200 but changes nothing.
    pub autodelete_ignored: bool,
    /// The status of `PATCH /autodelete`.
    pub autodelete_status: u16,
    /// Accept any non-empty bearer token (the conformance harness plants its own key).
    pub accept_any_key: bool,
    /// Every refusal echoes the `Authorization` header it got (as some APIs do in their 401
    /// bodies).
    pub echo_credentials: bool,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            create_delay: Duration::ZERO,
            create_status: 200,
            create_timeline: then("creating", Duration::from_millis(30), "started"),
            recover_timeline: then("starting", Duration::from_millis(30), "started"),
            stop_timeline: then("stopping", Duration::from_millis(30), "stopped"),
            start_timeline: then("starting", Duration::from_millis(30), "started"),
            autodelete_ignored: false,
            autodelete_status: 200,
            accept_any_key: false,
            echo_credentials: false,
        }
    }
}

/// A sandbox of the fake.
#[derive(Debug, Clone)]
pub struct FakeSandbox {
    /// Its id.
    pub id: String,
    /// Its creation name.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// `autoDeleteInterval`.
    pub auto_delete: Option<i64>,
    /// Whether an `error` state is recoverable.
    pub recoverable: bool,
    since: Instant,
    timeline: Timeline,
}

impl FakeSandbox {
    /// A sandbox in `timeline`, starting now.
    pub fn new(id: &str, timeline: Timeline) -> Self {
        FakeSandbox {
            id: id.to_owned(),
            name: format!("name-of-{id}"),
            labels: BTreeMap::new(),
            auto_delete: Some(30),
            recoverable: false,
            since: Instant::now(),
            timeline,
        }
    }

    /// The state now.
    pub fn state(&self) -> &'static str {
        let elapsed = self.since.elapsed();
        self.timeline
            .iter()
            .rev()
            .find(|(at, _)| *at <= elapsed)
            .map(|(_, s)| *s)
            .unwrap_or("unknown")
    }

    fn set(&mut self, timeline: Timeline) {
        self.since = Instant::now();
        self.timeline = timeline;
    }

    /// The API's view of the sandbox; `workDir` is its directory under the fake's `root`,
    /// where commands without a `cwd` run.
    fn json_in(&self, root: &Path) -> Value {
        json!({"id": self.id, "name": self.name, "state": self.state(), "labels": self.labels,
               "autoDeleteInterval": self.auto_delete, "recoverable": self.recoverable,
               "workDir": root.join(&self.id)})
    }
}

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The method.
    pub method: String,
    /// The path and query.
    pub path: String,
    /// Every header, lowercase name.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: String,
    /// The answer status, once answered.
    pub status: Option<u16>,
}

#[derive(Default)]
struct State {
    root: PathBuf,
    faults: Faults,
    sandboxes: BTreeMap<String, FakeSandbox>,
    requests: Vec<Recorded>,
    next_id: u64,
}

/// The running fake API.
#[derive(Clone)]
pub struct FakeApi {
    /// `http://127.0.0.1:<port>`.
    pub base_url: String,
    state: Arc<Mutex<State>>,
    _root: Arc<Root>,
}

/// The directory holding every sandbox's files; removed with the last handle.
struct Root(PathBuf);

impl Drop for Root {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl FakeApi {
    /// Starts a fake with `faults` on an ephemeral port.
    pub async fn start(faults: Faults) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let base_url = format!("http://{addr}");
        let root = std::env::temp_dir().join(format!(
            "remote-provider-fake-{}-{}",
            std::process::id(),
            addr.port()
        ));
        let state = Arc::new(Mutex::new(State { root: root.clone(), faults, ..State::default() }));
        let shared = state.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = shared.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| serve(state.clone(), req));
                    let _ =
                        http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
                });
            }
        });
        FakeApi { base_url, state, _root: Arc::new(Root(root)) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a sandbox.
    pub fn insert(&self, sandbox: FakeSandbox) {
        self.lock().sandboxes.insert(sandbox.id.clone(), sandbox);
    }

    /// A sandbox, if it exists.
    pub fn sandbox(&self, id: &str) -> Option<FakeSandbox> {
        self.lock().sandboxes.get(id).cloned()
    }

    /// Every sandbox.
    pub fn sandboxes(&self) -> Vec<FakeSandbox> {
        self.lock().sandboxes.values().cloned().collect()
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.lock().requests.clone()
    }

    /// The requests with `method` whose path starts with `prefix`.
    pub fn count(&self, method: &str, prefix: &str) -> usize {
        self.requests().iter().filter(|r| r.method == method && r.path.starts_with(prefix)).count()
    }

    /// Waits until a request matches `pred` and was answered (a 5-minute hang guard).
    pub async fn wait_answered(&self, pred: impl Fn(&Recorded) -> bool) -> Recorded {
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            if let Some(r) = self.requests().into_iter().find(|r| r.status.is_some() && pred(r)) {
                return r;
            }
            assert!(Instant::now() < deadline, "no matching answered request");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

fn answer(status: u16, body: Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = StatusCode::from_u16(status).expect("status");
    response
        .headers_mut()
        .insert("content-type", "application/json".parse().expect("header value"));
    response
}

async fn serve(
    state: Arc<Mutex<State>>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = request.method().clone();
    let path = request.uri().path_and_query().map(|p| p.to_string()).unwrap_or_default();
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let body = String::from_utf8_lossy(&body).into_owned();
    let index = {
        let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
        s.requests.push(Recorded {
            method: method.to_string(),
            path: path.clone(),
            headers: headers.clone(),
            body: body.clone(),
            status: None,
        });
        s.requests.len() - 1
    };
    let any_key = state.lock().unwrap_or_else(|p| p.into_inner()).faults.accept_any_key;
    let authorized = headers.iter().any(|(k, v)| {
        k == "authorization"
            && (*v == format!("Bearer {API_KEY}")
                || (any_key && v.strip_prefix("Bearer ").is_some_and(|t| !t.is_empty())))
    });
    let response = if authorized {
        route(&state, &method, &path, &body).await
    } else if state.lock().unwrap_or_else(|p| p.into_inner()).faults.echo_credentials {
        let presented = headers
            .iter()
            .find(|(k, _)| k == "authorization")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        answer(
            401,
            json!({"message": format!("invalid credentials: {presented} is not a key of this account")}),
        )
    } else {
        answer(401, json!({"message": "unauthorized"}))
    };
    let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
    s.requests[index].status = Some(response.status().as_u16());
    Ok(response)
}

async fn route(
    state: &Arc<Mutex<State>>,
    method: &Method,
    path: &str,
    body: &str,
) -> Response<Full<Bytes>> {
    let lock = || state.lock().unwrap_or_else(|p| p.into_inner());
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let body: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let missing = || answer(404, json!({"message": "sandbox not found"}));
    match (method.as_str(), segments.as_slice()) {
        ("GET", ["health"]) => answer(200, json!({"status": "ok"})),
        ("POST", ["sandbox"]) => {
            let (delay, status, id) = {
                let mut s = lock();
                s.next_id += 1;
                let id = format!("sbx-{}", s.next_id);
                let mut sandbox = FakeSandbox::new(&id, s.faults.create_timeline.clone());
                sandbox.name = body["name"].as_str().unwrap_or_default().to_owned();
                sandbox.labels = serde_json::from_value(body["labels"].clone()).unwrap_or_default();
                sandbox.auto_delete = body["autoDeleteInterval"].as_i64();
                s.sandboxes.insert(id.clone(), sandbox);
                (s.faults.create_delay, s.faults.create_status, id)
            };
            tokio::time::sleep(delay).await;
            if status != 200 {
                return answer(status, json!({"message": "internal error while creating"}));
            }
            let s = lock();
            match s.sandboxes.get(&id) {
                Some(sandbox) => answer(200, sandbox.json_in(&s.root)),
                None => missing(),
            }
        }
        ("GET", ["sandbox", "by-name", name]) => {
            let s = lock();
            match s.sandboxes.values().find(|b| b.name == *name) {
                Some(sandbox) => answer(200, sandbox.json_in(&s.root)),
                None => missing(),
            }
        }
        ("GET", ["sandbox", id]) => {
            let s = lock();
            match s.sandboxes.get(*id) {
                Some(sandbox) => answer(200, sandbox.json_in(&s.root)),
                None => missing(),
            }
        }
        ("DELETE", ["sandbox", id]) => match lock().sandboxes.remove(*id) {
            Some(_) => answer(200, json!({})),
            None => missing(),
        },
        ("POST", ["sandbox", id, action]) if *action != "exec" => {
            let mut s = lock();
            let faults = s.faults.clone();
            let Some(sandbox) = s.sandboxes.get_mut(*id) else { return missing() };
            match *action {
                "start" => sandbox.set(faults.start_timeline),
                "stop" => sandbox.set(faults.stop_timeline),
                "recover" if sandbox.state() == "error" => sandbox.set(faults.recover_timeline),
                "recover" => return answer(409, json!({"message": "not in error"})),
                _ => return answer(404, json!({"message": "no such action"})),
            }
            answer(200, json!({}))
        }
        ("PATCH", ["sandbox", id, "autodelete"]) => {
            let mut s = lock();
            let (ignored, status) = (s.faults.autodelete_ignored, s.faults.autodelete_status);
            let Some(sandbox) = s.sandboxes.get_mut(*id) else { return missing() };
            if status != 200 {
                return answer(status, json!({"message": "policy service unavailable"}));
            }
            if !ignored {
                sandbox.auto_delete = body["autoDeleteInterval"].as_i64();
            }
            answer(200, json!({}))
        }
        ("POST", ["sandbox", id, "exec"]) => {
            let (state_now, root) = {
                let s = lock();
                match s.sandboxes.get(*id) {
                    Some(sandbox) => (sandbox.state(), s.root.join(id)),
                    None => return missing(),
                }
            };
            if state_now != "started" {
                return answer(409, json!({"message": format!("sandbox is {state_now}")}));
            }
            exec(&root, &body).await
        }
        _ => answer(404, json!({"message": "no such route"})),
    }
}

/// Runs the command for real, in the sandbox's directory (created on first use) unless a
/// `cwd` is given; honours `stdin`, `env` and `timeoutMs`.
async fn exec(dir: &Path, body: &Value) -> Response<Full<Bytes>> {
    if let Err(e) = std::fs::create_dir_all(dir) {
        return answer(500, json!({"message": format!("sandbox directory: {e}")}));
    }
    let args: Vec<String> = serde_json::from_value(body["args"].clone()).unwrap_or_default();
    let env: BTreeMap<String, String> =
        serde_json::from_value(body["env"].clone()).unwrap_or_default();
    let mut command = tokio::process::Command::new(body["command"].as_str().unwrap_or_default());
    command
        .args(&args)
        .envs(&env)
        .current_dir(body["cwd"].as_str().map(Path::new).unwrap_or(dir))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, ended whole when the request times out or is dropped: a sandbox ends what a timed-out command started, not only the command.
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            return answer(200, json!({"exitCode": 127, "stdout": "", "stderr": format!("{e}\n")}))
        }
    };
    let group = child.id().map(GroupGuard);
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = body["stdin"].as_str().unwrap_or_default().to_owned();
    tokio::spawn(async move {
        let _ = stdin.write_all(input.as_bytes()).await;
    });
    let timeout = Duration::from_millis(body["timeoutMs"].as_u64().unwrap_or(60_000));
    match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(Ok(out)) => {
            // Finished in time: what it left running in the background stays, as in a sandbox.
            std::mem::forget(group);
            answer(
                200,
                json!({"exitCode": out.status.code(), "timedOut": false,
                   "stdout": String::from_utf8_lossy(&out.stdout),
                   "stderr": String::from_utf8_lossy(&out.stderr)}),
            )
        }
        Ok(Err(e)) => answer(500, json!({"message": format!("exec failed: {e}")})),
        Err(_) => {
            answer(200, json!({"exitCode": null, "timedOut": true, "stdout": "", "stderr": ""}))
        }
    }
}

/// Kills a command's whole process group when dropped.
struct GroupGuard(u32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        // SAFETY: kill(2) with a negative pid signals the group the fake created for the command.
        unsafe { libc::kill(-(self.0 as i32), libc::SIGKILL) };
    }
}
