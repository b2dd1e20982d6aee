//! The Docker Engine API, through [`bollard`]: connections, containers, labels, archives.
//!
//! One [`Engine`] per engine address, its API version negotiated once (Docker 25+ refuses old
//! versions, podman's compatible service refuses newer ones). Engine errors become
//! [`EngineError`]: the HTTP status (or "unreachable") and the operation, never the engine's
//! own text, which may quote configured values (it is logged at debug level instead).

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use bollard::models::{ContainerCreateBody, ContainerInspectResponse, ContainerSummary};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, ListContainersOptionsBuilder, RemoveContainerOptionsBuilder,
    StopContainerOptionsBuilder,
};
use bollard::Docker;
use paperclip_sandbox_sdk::Deadline;

/// The ownership labels every container of this provider carries (the SDK kit's).
pub use paperclip_sandbox_sdk::kit::creation::{
    LABEL_COMPANY, LABEL_ENVIRONMENT, LABEL_PROVIDER, LABEL_REUSE, LABEL_RUN,
};
/// The value of [`LABEL_PROVIDER`].
pub const PROVIDER_LABEL_VALUE: &str = "container";
/// Label: the lease's expiry (RFC 3339), when the host asked for one.
pub const LABEL_EXPIRES_AT: &str = "paperclip-expires-at";

/// Timeout of one engine request's answer (not of a streamed body).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Attempts of a read (inspect, list) that failed in transport: a busy engine may drop a
/// connection; a read is safe to repeat.
const READ_ATTEMPTS: u32 = 3;

/// Repeats `read` after a transport failure (no HTTP status), with a short backoff.
async fn retry_read<T, F, Fut>(mut read: F) -> EngineResult<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = EngineResult<T>>,
{
    let mut attempt = 1;
    loop {
        match read().await {
            Err(e) if e.status.is_none() && !e.is_deadline() && attempt < READ_ATTEMPTS => {
                tracing::debug!(error = %e, attempt, "engine read failed in transport; retrying");
                tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await;
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// The reason of [`EngineError::deadline`].
const DEADLINE_REASON: &str = "the engine is unreachable: no answer before the call's deadline";

/// A failed engine call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineError {
    /// What was asked (`create container`, `start container`…).
    pub operation: &'static str,
    /// The HTTP status, when the engine answered.
    pub status: Option<u16>,
    /// Why, in this provider's words.
    pub reason: String,
}

impl EngineError {
    /// Wraps a bollard error (the engine's text goes to the debug log only).
    pub fn from_bollard(operation: &'static str, e: bollard::errors::Error) -> Self {
        use bollard::errors::Error as B;
        match e {
            B::DockerResponseServerError { status_code, message } => {
                tracing::debug!(operation, status_code, engine_message = %message, "engine error");
                EngineError {
                    operation,
                    status: Some(status_code),
                    reason: match status_code {
                        304 => "already in that state".to_owned(),
                        404 => "not found".to_owned(),
                        409 => "conflict".to_owned(),
                        400..=499 => "refused".to_owned(),
                        _ => "engine failure".to_owned(),
                    },
                }
            }
            B::SocketNotFoundError(_) => EngineError {
                operation,
                status: None,
                reason: "the engine socket does not exist".to_owned(),
            },
            B::RequestTimeoutError => {
                EngineError { operation, status: None, reason: "no answer in time".to_owned() }
            }
            other => {
                tracing::debug!(operation, error = %other, "engine transport error");
                EngineError {
                    operation,
                    status: None,
                    reason: "the engine is unreachable or closed the connection".to_owned(),
                }
            }
        }
    }

    /// A local timeout around a call.
    pub fn timeout(operation: &'static str) -> Self {
        EngineError { operation, status: None, reason: "no answer in time".to_owned() }
    }

    /// The call's deadline passed before the engine answered.
    pub fn deadline(operation: &'static str) -> Self {
        EngineError { operation, status: None, reason: DEADLINE_REASON.to_owned() }
    }

    /// True for [`EngineError::deadline`]: there is no time left to repeat the request.
    pub fn is_deadline(&self) -> bool {
        self.status.is_none() && self.reason == DEADLINE_REASON
    }

    /// The engine did not answer (transport failure or the call's deadline), as opposed to
    /// answering with an error.
    pub fn is_unreachable(&self) -> bool {
        self.status.is_none()
    }

    /// The engine answered 404.
    pub fn is_not_found(&self) -> bool {
        self.status == Some(404)
    }

    /// The engine answered and refused (4xx other than 404): nothing was allocated.
    pub fn is_refusal(&self) -> bool {
        matches!(self.status, Some(400..=499))
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.status {
            Some(s) => {
                write!(f, "{} failed: the engine answered {s} ({})", self.operation, self.reason)
            }
            None => write!(f, "{} failed: {}", self.operation, self.reason),
        }
    }
}

impl std::error::Error for EngineError {}

/// Result of an engine call.
pub type EngineResult<T> = Result<T, EngineError>;

/// A connection to one engine, with the deadline of the call it serves
/// ([`with_deadline`](Self::with_deadline)): every request it makes is bounded by it.
#[derive(Clone)]
pub struct Engine {
    docker: Docker,
    deadline: Option<Deadline>,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine").finish_non_exhaustive()
    }
}

/// One engine address, connected (and its API version negotiated) by the first call that
/// needs it, under that call's deadline, and shared by the later calls.
///
/// A config's backend holds one: connecting is left to the first call rather than done when
/// the backend opens, so a stalled engine is reported within the call's deadline.
pub struct EngineSlot {
    host: String,
    engine: tokio::sync::Mutex<Option<Engine>>,
}

impl fmt::Debug for EngineSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The address may name a private socket path or host: not shown.
        f.debug_struct("EngineSlot").finish_non_exhaustive()
    }
}

impl EngineSlot {
    /// The engine at `host` (`unix:///…`, `tcp://…`, `http://…`), not connected yet.
    pub fn new(host: impl Into<String>) -> Self {
        EngineSlot { host: host.into(), engine: tokio::sync::Mutex::new(None) }
    }

    /// The engine, for a call ending at `deadline` (which also bounds connecting to it).
    pub async fn get(&self, deadline: Option<Deadline>) -> EngineResult<Engine> {
        let op = "connect to the engine";
        let mut slot = match deadline {
            Some(d) => d.run(self.engine.lock()).await.map_err(|_| EngineError::deadline(op))?,
            None => self.engine.lock().await,
        };
        if let Some(e) = slot.as_ref() {
            return Ok(e.with_deadline(deadline));
        }
        let engine = match deadline {
            Some(d) => d
                .run(Engine::connect(&self.host))
                .await
                .map_err(|_| EngineError::deadline(op))??,
            None => Engine::connect(&self.host).await?,
        };
        *slot = Some(engine.clone());
        Ok(engine.with_deadline(deadline))
    }

    /// Forgets the connection (after a transport failure, so the next call reconnects).
    pub async fn forget(&self) {
        *self.engine.lock().await = None;
    }
}

impl Engine {
    /// Connects and negotiates the API version.
    pub async fn connect(host: &str) -> EngineResult<Engine> {
        let op = "connect to the engine";
        let version = bollard::ClientVersion { major_version: 1, minor_version: 41 };
        let docker = if let Some(path) = host.strip_prefix("unix://") {
            Docker::connect_with_unix(path, REQUEST_TIMEOUT.as_secs(), &version)
        } else {
            let addr = host.replacen("tcp://", "http://", 1);
            Docker::connect_with_http(&addr, REQUEST_TIMEOUT.as_secs(), &version)
        }
        .map_err(|e| EngineError::from_bollard(op, e))?;
        // Ask the server's version and use the lower of both (bollard's negotiation).
        let docker =
            docker.negotiate_version().await.map_err(|e| EngineError::from_bollard(op, e))?;
        Ok(Engine { docker, deadline: None })
    }

    /// This engine for a call ending at `deadline`: its requests are bounded by it.
    pub fn with_deadline(&self, deadline: Option<Deadline>) -> Engine {
        Engine { docker: self.docker.clone(), deadline }
    }

    /// This engine without a call's deadline (work that outlives the call, such as a
    /// background sweep).
    pub fn without_deadline(&self) -> Engine {
        self.with_deadline(None)
    }

    /// The deadline of the call this engine serves.
    pub fn deadline(&self) -> Option<Deadline> {
        self.deadline
    }

    /// Runs one engine request until the call's deadline: a request still unanswered then is
    /// [`EngineError::deadline`].
    pub async fn bounded<T>(
        &self,
        operation: &'static str,
        request: impl std::future::Future<Output = Result<T, bollard::errors::Error>>,
    ) -> EngineResult<T> {
        let answer = match self.deadline {
            Some(d) => d.run(request).await.map_err(|_| EngineError::deadline(operation))?,
            None => request.await,
        };
        answer.map_err(|e| EngineError::from_bollard(operation, e))
    }

    /// The bollard client (bound its requests with [`bounded`](Self::bounded)).
    pub fn docker(&self) -> &Docker {
        &self.docker
    }

    /// `GET /_ping`.
    pub async fn ping(&self) -> EngineResult<()> {
        self.bounded("ping", self.docker.ping()).await.map(|_| ())
    }

    /// True when `image` is present in the engine.
    pub async fn image_present(&self, image: &str) -> EngineResult<bool> {
        retry_read(|| self.image_present_once(image)).await
    }

    async fn image_present_once(&self, image: &str) -> EngineResult<bool> {
        match self.bounded("inspect image", self.docker.inspect_image(image)).await {
            Ok(_) => Ok(true),
            Err(e) => {
                if e.is_not_found() {
                    Ok(false)
                } else {
                    Err(e)
                }
            }
        }
    }

    /// `POST /containers/create?name=…`: the new container's id.
    pub async fn create(&self, name: &str, body: ContainerCreateBody) -> EngineResult<String> {
        let options = CreateContainerOptionsBuilder::default().name(name).build();
        let create = self.docker.create_container(Some(options), body);
        self.bounded("create container", create).await.map(|r| r.id)
    }

    /// `POST /containers/{id}/start`; already running is success.
    pub async fn start(&self, id: &str) -> EngineResult<()> {
        match self.bounded("start container", self.docker.start_container(id, None)).await {
            Ok(()) => Ok(()),
            Err(e) => match e {
                e if e.status == Some(304) => Ok(()),
                e => Err(e),
            },
        }
    }

    /// `POST /containers/{id}/stop?t=…`; already stopped is success, missing is `Ok(false)`.
    pub async fn stop(&self, id: &str, grace_secs: i32) -> EngineResult<bool> {
        let options = StopContainerOptionsBuilder::default().t(grace_secs).build();
        match self.bounded("stop container", self.docker.stop_container(id, Some(options))).await {
            Ok(()) => Ok(true),
            Err(e) => match e {
                e if e.status == Some(304) => Ok(true),
                e if e.is_not_found() => Ok(false),
                e => Err(e),
            },
        }
    }

    /// `DELETE /containers/{id}?force=1&v=1` (with its anonymous volumes); missing is
    /// `Ok(false)`.
    pub async fn remove(&self, id: &str) -> EngineResult<bool> {
        let options = RemoveContainerOptionsBuilder::default().force(true).v(true).build();
        let remove = self.docker.remove_container(id, Some(options));
        match self.bounded("remove container", remove).await {
            Ok(()) => Ok(true),
            Err(e) => match e {
                e if e.is_not_found() => Ok(false),
                e => Err(e),
            },
        }
    }

    /// `GET /containers/{id}/json`; missing is `None`.
    pub async fn inspect(&self, id: &str) -> EngineResult<Option<ContainerInspectResponse>> {
        retry_read(|| self.inspect_once(id)).await
    }

    async fn inspect_once(&self, id: &str) -> EngineResult<Option<ContainerInspectResponse>> {
        match self.bounded("inspect container", self.docker.inspect_container(id, None)).await {
            Ok(c) => Ok(Some(c)),
            Err(e) => match e {
                e if e.is_not_found() => Ok(None),
                e => Err(e),
            },
        }
    }

    /// Containers (running or not) carrying every label of `labels`.
    pub async fn list_labelled(
        &self,
        labels: &[(&str, &str)],
    ) -> EngineResult<Vec<ContainerSummary>> {
        let filter: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let filters = HashMap::from([("label".to_owned(), filter)]);
        retry_read(|| async {
            let options =
                ListContainersOptionsBuilder::default().all(true).filters(&filters).build();
            self.bounded("list containers", self.docker.list_containers(Some(options))).await
        })
        .await
    }
}

/// The labels of an inspected container.
pub fn labels_of(c: &ContainerInspectResponse) -> HashMap<String, String> {
    c.config.as_ref().and_then(|c| c.labels.clone()).unwrap_or_default()
}

/// True when an inspected container is running.
pub fn is_running(c: &ContainerInspectResponse) -> bool {
    c.state.as_ref().and_then(|s| s.running).unwrap_or(false)
}

/// The name of an inspected container, without the engine's leading `/`.
pub fn name_of(c: &ContainerInspectResponse) -> String {
    c.name.as_deref().unwrap_or_default().trim_start_matches('/').to_owned()
}
