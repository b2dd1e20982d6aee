//! Interactive byte streams (`paperclip-2026-11`): login terminals (`loginPty*`) and duplex
//! channels (`duplexChannel*`).
//!
//! The host owns each stream's route: it mints an opaque `hostRouteId`, sends it on open and
//! closes by it, so it can close a stream even when the open answer was lost. The worker
//! registers the stream under that id and answers a `workerSessionId` that binds its output.
//! Output and the exit travel as worker→host **notifications** (never as answers), each
//! carrying both ids:
//!
//! | host→worker | params → result | worker→host notifications |
//! |---|---|---|
//! | `loginPtyOpen` | [`LoginPtyOpenParams`] → [`LoginPtyOpenResult`] | `loginPty.output` [`LoginPtyOutputParams`], `loginPty.exit` [`LoginPtyExitParams`] |
//! | `loginPtyInput` / `loginPtyStop` | [`LoginPtyInputParams`] / [`LoginPtyStopParams`] → `null` | |
//! | `loginPtyClose` | [`LoginPtyCloseParams`] → [`LoginPtyCloseResult`] | |
//! | `duplexChannelOpen` | [`DuplexChannelOpenParams`] → [`DuplexChannelOpenResult`] | `duplexChannel.data` [`DuplexChannelDataParams`], `duplexChannel.exit` [`DuplexChannelExitParams`] |
//! | `duplexChannelWrite` / `duplexChannelStop` | [`DuplexChannelWriteParams`] / [`DuplexChannelStopParams`] → `null` | |
//! | `duplexChannelClose` | [`DuplexChannelCloseParams`] → [`DuplexChannelCloseResult`] | |
//!
//! A login terminal carries text; a duplex channel carries raw bytes, which cross the JSON
//! line as canonical standard base64 ([`ChannelBytes`]). A duplex channel is what the
//! `duplexCommandStream` capability requires (its open method).

use std::fmt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use schemars::JsonSchema;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_with::skip_serializing_none;

use super::lease::open_enum;

/// A message of a bound stream: the open's `hostRouteId` and the open answer's
/// `workerSessionId`, then the message's own fields, with a `new` taking them all in that order
/// (`as into` fields as `impl Into<T>`).
macro_rules! bound_message {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident: $ty:ty $(as $into:ident)? ),* $(,)?
        }
        $(#[$new_meta:meta])*
        fn new;
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
        #[serde(rename_all = "camelCase")]
        #[non_exhaustive]
        pub struct $name {
            /// The open's `hostRouteId`.
            pub host_route_id: String,
            /// The open answer's `workerSessionId`.
            pub worker_session_id: String,
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $name {
            $(#[$new_meta])*
            pub fn new(
                host_route_id: impl Into<String>,
                worker_session_id: impl Into<String>,
                $( $field: bound_message!(@arg $ty $(, $into)?), )*
            ) -> Self {
                $name {
                    host_route_id: host_route_id.into(),
                    worker_session_id: worker_session_id.into(),
                    $( $field: bound_message!(@val $field $(, $into)?), )*
                }
            }
        }
    };
    (@arg $ty:ty, into) => { impl Into<$ty> };
    (@arg $ty:ty) => { $ty };
    (@val $field:ident, into) => { $field.into() };
    (@val $field:ident) => { $field };
}

open_enum! {
    /// The fixed login command a terminal runs; the worker maps it to a command of its own
    /// (the request never carries a command string).
    pub enum LoginCommandKey {
        /// Claude's `setup-token` login.
        Claude = "claude",
        /// Codex's login.
        Codex = "codex",
        /// Grok's login.
        Grok = "grok",
    }
}

/// Params of `loginPtyOpen`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LoginPtyOpenParams {
    /// The host's route; register the terminal under it.
    pub host_route_id: String,
    /// The driver.
    pub driver_key: String,
    /// The company owning the login.
    pub company_id: String,
    /// The environment the login runs in.
    pub environment_id: String,
    /// The lease whose sandbox runs the terminal.
    pub provider_lease_id: String,
    /// Which login command to run.
    pub login_command_key: LoginCommandKey,
    /// The session home, exactly `/tmp/paperclip-adapter-login/<uuid>`; revalidate it before
    /// touching the filesystem ([`is_login_session_home`]).
    pub session_home: String,
}

/// The prefix of a login session home.
pub const LOGIN_SESSION_HOME_PREFIX: &str = "/tmp/paperclip-adapter-login/";

/// True for a session home of the exact shape `/tmp/paperclip-adapter-login/<uuid>`.
pub fn is_login_session_home(path: &str) -> bool {
    path.strip_prefix(LOGIN_SESSION_HOME_PREFIX).is_some_and(super::task::is_uuid)
}

/// Result of `loginPtyOpen`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LoginPtyOpenResult {
    /// Binds the output and exit notifications.
    pub worker_session_id: String,
}

impl LoginPtyOpenResult {
    /// The answer for `worker_session_id`.
    pub fn new(worker_session_id: impl Into<String>) -> Self {
        LoginPtyOpenResult { worker_session_id: worker_session_id.into() }
    }
}

/// Params of `loginPtyInput` (the result is `null`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LoginPtyInputParams {
    /// The terminal.
    pub worker_session_id: String,
    /// The input text to write to the terminal.
    pub data: String,
}

/// Params of `loginPtyStop` (the result is `null`): stop the terminal's child.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LoginPtyStopParams {
    /// The terminal.
    pub worker_session_id: String,
}

/// Params of `loginPtyClose`: close the terminal registered under `hostRouteId`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LoginPtyCloseParams {
    /// The authoritative key.
    pub host_route_id: String,
    /// Informative only; never key the close on it (it is absent after a lost open answer).
    pub worker_session_id: Option<String>,
}

/// Result of `loginPtyClose`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LoginPtyCloseResult {
    /// The close's `hostRouteId`.
    pub host_route_id: String,
}

impl LoginPtyCloseResult {
    /// The acknowledgement of `host_route_id`.
    pub fn new(host_route_id: impl Into<String>) -> Self {
        LoginPtyCloseResult { host_route_id: host_route_id.into() }
    }
}

bound_message! {
    /// Params of the worker→host `loginPty.output` notification.
    pub struct LoginPtyOutputParams {
        /// Terminal output (non-empty).
        pub chunk: String as into,
    }
    /// `chunk` of the terminal bound to `host_route_id` / `worker_session_id`.
    fn new;
}

bound_message! {
    /// Params of the worker→host `loginPty.exit` notification.
    pub struct LoginPtyExitParams {
        /// The child's exit code, or `null` when it ended without one. Always sent.
        pub exit_code: Option<i32>,
    }
    /// The exit of the terminal bound to `host_route_id` / `worker_session_id`.
    fn new;
}

/// Raw bytes of a duplex channel, carried on the wire as canonical standard base64 (with
/// padding). Reading rejects an empty string and any text that does not re-encode to itself,
/// so a malformed frame is an error, never silently empty bytes.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct ChannelBytes(pub Vec<u8>);

impl ChannelBytes {
    /// Wraps `bytes`.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        ChannelBytes(bytes.into())
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The base64 wire text.
    pub fn encode(&self) -> String {
        STANDARD.encode(&self.0)
    }

    /// Decodes wire text; `None` for an empty or non-canonical string.
    pub fn decode(text: &str) -> Option<Self> {
        if text.is_empty() {
            return None;
        }
        let bytes = STANDARD.decode(text).ok()?;
        (STANDARD.encode(&bytes) == text).then_some(ChannelBytes(bytes))
    }
}

impl fmt::Debug for ChannelBytes {
    /// The length only: channel bytes may carry anything a process prints.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ChannelBytes({} bytes)", self.0.len())
    }
}

impl_from!(ChannelBytes {
    Vec<u8> => |v| ChannelBytes(v),
    &str => |v| ChannelBytes(v.as_bytes().to_vec()),
    &[u8] => |v| ChannelBytes(v.to_vec()),
});

impl Serialize for ChannelBytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.encode())
    }
}

impl<'de> Deserialize<'de> for ChannelBytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        ChannelBytes::decode(&text)
            .ok_or_else(|| D::Error::custom("expected non-empty canonical base64 channel bytes"))
    }
}

impl JsonSchema for ChannelBytes {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ChannelBytes".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "contentEncoding": "base64",
            "minLength": 1
        })
    }
}

/// Params of `duplexChannelOpen`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DuplexChannelOpenParams {
    /// The host's route; register the channel under it.
    pub host_route_id: String,
    /// The driver.
    pub driver_key: String,
    /// The company owning the channel.
    pub company_id: String,
    /// The environment the channel runs in.
    pub environment_id: String,
    /// The lease whose sandbox runs the command.
    pub provider_lease_id: String,
    /// The argument vector: element 0 is the program. Never interpret it with a shell
    /// without quoting each element.
    pub command: Vec<String>,
}

impl DuplexChannelOpenParams {
    /// Open `command` on route `host_route_id` in lease `provider_lease_id`.
    pub fn new(
        host_route_id: impl Into<String>,
        driver_key: impl Into<String>,
        company_id: impl Into<String>,
        environment_id: impl Into<String>,
        provider_lease_id: impl Into<String>,
        command: Vec<String>,
    ) -> Self {
        DuplexChannelOpenParams {
            host_route_id: host_route_id.into(),
            driver_key: driver_key.into(),
            company_id: company_id.into(),
            environment_id: environment_id.into(),
            provider_lease_id: provider_lease_id.into(),
            command,
        }
    }
}

/// Result of `duplexChannelOpen`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DuplexChannelOpenResult {
    /// The open's `hostRouteId`, echoed.
    pub host_route_id: String,
    /// Binds the data and exit notifications.
    pub worker_session_id: String,
}

impl DuplexChannelOpenResult {
    /// The answer binding `host_route_id` to `worker_session_id`.
    pub fn new(host_route_id: impl Into<String>, worker_session_id: impl Into<String>) -> Self {
        DuplexChannelOpenResult {
            host_route_id: host_route_id.into(),
            worker_session_id: worker_session_id.into(),
        }
    }
}

bound_message! {
    /// Params of `duplexChannelWrite` (the result is `null`). Act only on the exact live pair.
    pub struct DuplexChannelWriteParams {
        /// The bytes to write to the command's stdin.
        pub data: ChannelBytes as into,
    }
    /// Write `data` to the channel bound to `host_route_id` / `worker_session_id`.
    fn new;
}

bound_message! {
    /// Params of `duplexChannelStop` (the result is `null`): stop the channel's command.
    pub struct DuplexChannelStopParams {
    }
    /// Stop the channel bound to `host_route_id` / `worker_session_id`.
    fn new;
}

/// Params of `duplexChannelClose`: close the channel registered under `hostRouteId`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DuplexChannelCloseParams {
    /// The authoritative key.
    pub host_route_id: String,
    /// Informative only; never key the close on it (it is absent after a lost open answer).
    pub worker_session_id: Option<String>,
}

impl DuplexChannelCloseParams {
    /// Close the channel of `host_route_id`.
    pub fn new(host_route_id: impl Into<String>, worker_session_id: Option<String>) -> Self {
        DuplexChannelCloseParams { host_route_id: host_route_id.into(), worker_session_id }
    }
}

/// Result of `duplexChannelClose`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DuplexChannelCloseResult {
    /// The close's `hostRouteId`.
    pub host_route_id: String,
    /// The bound session, echoed on a bound close; absent when none was bound yet.
    pub worker_session_id: Option<String>,
}

impl DuplexChannelCloseResult {
    /// The acknowledgement of `host_route_id`, echoing the bound session if any.
    pub fn new(host_route_id: impl Into<String>, worker_session_id: Option<String>) -> Self {
        DuplexChannelCloseResult { host_route_id: host_route_id.into(), worker_session_id }
    }
}

bound_message! {
    /// Params of the worker→host `duplexChannel.data` notification.
    pub struct DuplexChannelDataParams {
        /// Output bytes (non-empty).
        pub chunk: ChannelBytes as into,
    }
    /// `chunk` of the channel bound to `host_route_id` / `worker_session_id`.
    fn new;
}

bound_message! {
    /// Params of the worker→host `duplexChannel.exit` notification.
    pub struct DuplexChannelExitParams {
        /// The command's exit code, or `null` when it ended without one. Always sent.
        pub exit_code: Option<i32>,
        /// True when the transport closed without exit data (not a process exit). Always sent.
        #[serde(default)]
        pub transport_closed: bool,
    }
    /// The exit of the channel bound to `host_route_id` / `worker_session_id`.
    fn new;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::methods::lease::from_json;

    #[test]
    fn channel_bytes_are_canonical_base64() {
        let b = ChannelBytes::new(b"echo hi\n".to_vec());
        assert_eq!(serde_json::to_value(&b).unwrap(), json!("ZWNobyBoaQo="));
        assert_eq!(from_json::<ChannelBytes>(json!("ZWNobyBoaQo=")), b);
        let every: Vec<u8> = (0..=255).collect();
        let text = ChannelBytes::new(every.clone()).encode();
        assert_eq!(ChannelBytes::decode(&text).unwrap().as_bytes(), &every[..]);
        for bad in ["", "ZWNobyBoaQo", "ZWNobyBoaQp=", "ZW#obyBoaQo=", "ZWNo byBoaQo="] {
            assert!(ChannelBytes::decode(bad).is_none(), "{bad:?}");
            assert!(serde_json::from_value::<ChannelBytes>(json!(bad)).is_err());
        }
        assert!(!format!("{b:?}").contains("echo"));
    }

    #[test]
    fn duplex_wire() {
        let open: DuplexChannelOpenParams = from_json(
            json!({"hostRouteId": "r1", "driverKey": "d",
            "companyId": "c1", "environmentId": "e1", "providerLeaseId": "sbx1", "command": ["sh"]}),
        );
        assert_eq!(open.command, ["sh"]);
        let write: DuplexChannelWriteParams =
            from_json(json!({"hostRouteId": "r1", "workerSessionId": "w1", "data": "ZXhpdAo="}));
        assert_eq!(write.data.as_bytes(), b"exit\n");
        let exit = DuplexChannelExitParams {
            host_route_id: "r1".into(),
            worker_session_id: "w1".into(),
            exit_code: None,
            transport_closed: false,
        };
        assert_eq!(
            serde_json::to_value(&exit).unwrap(),
            json!({"hostRouteId": "r1", "workerSessionId": "w1", "exitCode": null, "transportClosed": false})
        );
        assert_eq!(
            serde_json::to_value(DuplexChannelCloseResult::new("r1", None)).unwrap(),
            json!({"hostRouteId": "r1"})
        );
        let close: DuplexChannelCloseParams = from_json(json!({"hostRouteId": "r1"}));
        assert_eq!(close.worker_session_id, None);
    }

    #[test]
    fn login_wire() {
        let home = "/tmp/paperclip-adapter-login/0b6c2f0e-6a43-4d3b-9a57-2f0f1b8c9d10";
        let open: LoginPtyOpenParams = from_json(json!({"hostRouteId": "r1", "driverKey": "d",
            "companyId": "c1", "environmentId": "e1", "providerLeaseId": "sbx1",
            "loginCommandKey": "claude", "sessionHome": home}));
        assert_eq!(open.login_command_key, LoginCommandKey::Claude);
        assert!(is_login_session_home(&open.session_home));
        assert!(!is_login_session_home("/tmp/paperclip-adapter-login/../etc"));
        assert!(!is_login_session_home("/home/x"));
        let exit = LoginPtyExitParams {
            host_route_id: "r1".into(),
            worker_session_id: "w1".into(),
            exit_code: Some(0),
        };
        assert_eq!(
            serde_json::to_value(&exit).unwrap(),
            json!({"hostRouteId": "r1", "workerSessionId": "w1", "exitCode": 0})
        );
    }
}
