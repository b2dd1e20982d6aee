//! The bounds on the inputs of `environmentExecute`: what a command line and an environment
//! the host's own builder produces look like, and what a worker refuses before running
//! anything.
//!
//! The host builds `env` from its own settings (string keys that are environment names) and
//! `command`/`args` from an argument vector; none of them ever holds a NUL byte (an `execve`
//! cannot pass one) or an environment key that is empty or holds `=` (the variable would be
//! another one: `HOME=/etc` with value `x` sets `HOME` to `/etc=x`). The host states no size
//! limit of its own, so the sizes below are those of Linux's `execve`, which every command
//! of a Linux sandbox goes through, rounded down:
//!
//! | input | rule |
//! |---|---|
//! | `command` | non-empty; no NUL; at most [`MAX_EXECUTE_STRING_BYTES`] bytes |
//! | `args[i]` | no NUL; at most [`MAX_EXECUTE_STRING_BYTES`] bytes |
//! | `command` and `args` | at most [`MAX_EXECUTE_ARGV_BYTES`] bytes together (each string plus its NUL) |
//! | `env` | at most [`MAX_EXECUTE_ENV_ENTRIES`] entries and [`MAX_EXECUTE_ENV_BYTES`] bytes (each `KEY=VALUE` plus its NUL) |
//! | an `env` key | non-empty; neither `=` nor NUL; `KEY=VALUE` at most [`MAX_EXECUTE_STRING_BYTES`] bytes |
//! | an `env` value | no NUL |
//! | `cwd` | no NUL |
//!
//! A violation is an [`ExecuteInputError`]: the path of the input and the rule, never the
//! value (`Invalid params: params.env: a key contains '='`), answered `-32602`. The SDK checks
//! these before an `environmentExecute` hook runs ([`check_execute_inputs`]), so every
//! provider on it refuses the same inputs, and a huge but well-formed environment (100,000
//! variables) is refused in a few milliseconds instead of reaching a backend.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::jsonrpc::ErrorObject;

/// The longest single string of a command line or environment (`command`, an argument, one
/// `KEY=VALUE`): 131,071 bytes, Linux's `MAX_ARG_STRLEN` (32 pages) without the NUL.
pub const MAX_EXECUTE_STRING_BYTES: usize = 32 * 4096 - 1;

/// The bytes of `command` and `args` together, each with its NUL: 1 MiB (half of Linux's
/// default `ARG_MAX`, the other half being the environment's).
pub const MAX_EXECUTE_ARGV_BYTES: usize = 1024 * 1024;

/// The bytes of the environment, each `KEY=VALUE` with its NUL: 1 MiB.
pub const MAX_EXECUTE_ENV_BYTES: usize = 1024 * 1024;

/// The most environment variables one execute may set: 10,000 (far above what the host's
/// builder sends; a bound so that a huge environment is refused rather than passed on).
pub const MAX_EXECUTE_ENV_ENTRIES: usize = 10_000;

/// An `environmentExecute` input outside the bounds (see the module docs): where, and which
/// rule. It never carries the value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExecuteInputError {
    /// The path of the input (`params.env`, `params.args[2]`, …).
    pub path: String,
    /// The rule it breaks.
    pub rule: &'static str,
}

impl fmt::Display for ExecuteInputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.rule)
    }
}

impl std::error::Error for ExecuteInputError {}

impl ExecuteInputError {
    fn new(path: impl Into<String>, rule: &'static str) -> Self {
        ExecuteInputError { path: path.into(), rule }
    }

    /// The `-32602 Invalid params: <path>: <rule>` answer.
    pub fn to_error_object(&self) -> ErrorObject {
        ErrorObject::invalid_params(self)
    }
}

/// Checks `command`, `args`, `env` (as key/value pairs) and `cwd` against the bounds.
pub fn check_execute_inputs<'a>(
    command: &str,
    args: impl IntoIterator<Item = &'a str>,
    env: impl IntoIterator<Item = (&'a str, &'a str)>,
    cwd: Option<&str>,
) -> Result<(), ExecuteInputError> {
    let mut inputs = Inputs::default();
    inputs.command(command);
    args.into_iter().for_each(|a| inputs.arg(a));
    env.into_iter().for_each(|(k, v)| inputs.env(k, v));
    if let Some(cwd) = cwd {
        inputs.cwd(cwd);
    }
    inputs.finish()
}

/// Checks the inputs of raw `environmentExecute` params text against the bounds, reading only
/// `command`, `args`, `env` and `cwd`. Params that are not an object of that shape pass: the
/// hook's own params reading answers those.
pub fn check_execute_params_json(params: &str) -> Result<(), ExecuteInputError> {
    match serde_json::from_str::<InputsView>(params) {
        Ok(view) => view.0.finish(),
        Err(_) => Ok(()),
    }
}

/// The running check: sizes so far and the first violation seen.
#[derive(Default)]
struct Inputs {
    argv_bytes: usize,
    args: usize,
    env_entries: usize,
    env_bytes: usize,
    first: Option<ExecuteInputError>,
}

impl Inputs {
    fn fail(&mut self, error: impl FnOnce() -> ExecuteInputError) {
        if self.first.is_none() {
            self.first = Some(error());
        }
    }

    fn string(&mut self, path: impl Fn() -> String, s: &str) {
        if s.as_bytes().contains(&0) {
            self.fail(|| ExecuteInputError::new(path(), "contains a NUL byte"));
        } else if s.len() > MAX_EXECUTE_STRING_BYTES {
            self.fail(|| ExecuteInputError::new(path(), "longer than 131071 bytes"));
        }
        self.argv_bytes = self.argv_bytes.saturating_add(s.len() + 1);
    }

    fn command(&mut self, command: &str) {
        if command.is_empty() {
            self.fail(|| ExecuteInputError::new("params.command", "is empty"));
        }
        self.string(|| "params.command".into(), command);
    }

    fn arg(&mut self, arg: &str) {
        let i = self.args;
        self.string(|| format!("params.args[{i}]"), arg);
        self.args += 1;
    }

    fn env(&mut self, key: &str, value: &str) {
        const PATH: &str = "params.env";
        if key.is_empty() {
            self.fail(|| ExecuteInputError::new(PATH, "a key is empty"));
        } else if key.contains('=') {
            self.fail(|| ExecuteInputError::new(PATH, "a key contains '='"));
        } else if key.as_bytes().contains(&0) {
            self.fail(|| ExecuteInputError::new(PATH, "a key contains a NUL byte"));
        } else if value.as_bytes().contains(&0) {
            self.fail(|| ExecuteInputError::new(PATH, "a value contains a NUL byte"));
        } else if key.len() + 1 + value.len() > MAX_EXECUTE_STRING_BYTES {
            self.fail(|| ExecuteInputError::new(PATH, "a KEY=VALUE is longer than 131071 bytes"));
        }
        self.env_entries += 1;
        self.env_bytes = self.env_bytes.saturating_add(key.len() + value.len() + 2);
    }

    fn cwd(&mut self, cwd: &str) {
        if cwd.as_bytes().contains(&0) {
            self.fail(|| ExecuteInputError::new("params.cwd", "contains a NUL byte"));
        }
    }

    fn finish(mut self) -> Result<(), ExecuteInputError> {
        if self.argv_bytes > MAX_EXECUTE_ARGV_BYTES {
            self.fail(|| {
                ExecuteInputError::new("params.args", "command and args exceed 1048576 bytes")
            });
        }
        if self.env_entries > MAX_EXECUTE_ENV_ENTRIES {
            self.fail(|| ExecuteInputError::new("params.env", "more than 10000 variables"));
        }
        if self.env_bytes > MAX_EXECUTE_ENV_BYTES {
            self.fail(|| ExecuteInputError::new("params.env", "larger than 1048576 bytes"));
        }
        self.first.map_or(Ok(()), Err)
    }
}

/// The inputs of raw params, checked while they are read (no copy of the environment kept).
struct InputsView(Inputs);

impl<'de> Deserialize<'de> for InputsView {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ParamsVisitor)
    }
}

struct ParamsVisitor;

impl<'de> Visitor<'de> for ParamsVisitor {
    type Value = InputsView;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("execute params")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<InputsView, A::Error> {
        let mut inputs = Inputs::default();
        let mut command = false;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "command" => {
                    inputs.command(&map.next_value::<Cow<'de, str>>()?);
                    command = true;
                }
                "args" => {
                    if let Some(args) = map.next_value::<Option<Args>>()? {
                        args.0.iter().for_each(|a| inputs.arg(a));
                    }
                }
                "env" => {
                    if let Some(Env(env)) = map.next_value::<Option<Env>>()? {
                        // Folded in after the arguments' count, so paths stay per input.
                        inputs.env_entries += env.env_entries;
                        inputs.env_bytes = inputs.env_bytes.saturating_add(env.env_bytes);
                        if inputs.first.is_none() {
                            inputs.first = env.first;
                        }
                    }
                }
                "cwd" => {
                    if let Some(cwd) = map.next_value::<Option<Cow<'de, str>>>()? {
                        inputs.cwd(&cwd);
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if !command {
            return Err(de::Error::missing_field("command"));
        }
        Ok(InputsView(inputs))
    }
}

/// `args`, read as strings.
struct Args(Vec<String>);

impl<'de> Deserialize<'de> for Args {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Args;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of strings")
            }
            fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Args, S::Error> {
                let mut args = Vec::new();
                while let Some(a) = seq.next_element::<String>()? {
                    args.push(a);
                }
                Ok(Args(args))
            }
        }
        d.deserialize_seq(V)
    }
}

/// `env`, checked entry by entry as it is read.
struct Env(Inputs);

impl<'de> Deserialize<'de> for Env {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Env;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Env, A::Error> {
                let mut inputs = Inputs::default();
                while let Some((k, v)) = map.next_entry::<Cow<'de, str>, Cow<'de, str>>()? {
                    inputs.env(&k, &v);
                }
                Ok(Env(inputs))
            }
        }
        d.deserialize_map(V)
    }
}

impl<C> super::ExecuteParams<C> {
    /// Checks the inputs against the bounds of [`execute_bounds`](super::execute_bounds) (the
    /// SDK does so before the hook runs).
    pub fn check_inputs(&self) -> Result<(), ExecuteInputError> {
        let env = self.env.iter().flatten().map(|(k, v)| (k.as_str(), v.as_str()));
        check_execute_inputs(
            &self.command,
            self.args().iter().map(String::as_str),
            env,
            self.cwd.as_deref(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(params: serde_json::Value) -> Result<(), ExecuteInputError> {
        let text = params.to_string();
        let from_text = check_execute_params_json(&text);
        let typed: super::super::ExecuteParams = serde_json::from_value(
            json!({
                "driverKey": "d", "companyId": "c", "environmentId": "e", "config": {},
                "lease": {"providerLeaseId": "l"}
            })
            .as_object()
            .unwrap()
            .clone()
            .into_iter()
            .chain(params.as_object().unwrap().clone())
            .collect::<serde_json::Map<_, _>>()
            .into(),
        )
        .unwrap();
        assert_eq!(typed.check_inputs(), from_text, "one rule, two readers");
        from_text
    }

    #[test]
    fn well_formed_inputs_pass() {
        check(json!({"command": "sh", "args": ["-c", "echo hi"], "env": {"A": "1", "B_2": ""}, "cwd": "/tmp"})).unwrap();
        check(json!({"command": "sh", "args": null, "env": null})).unwrap();
    }

    #[test]
    fn bad_keys_are_refused_naming_the_path_never_the_value() {
        for (key, rule) in [
            ("HOME=/etc", "a key contains '='"),
            ("=x", "a key contains '='"),
            ("", "a key is empty"),
            ("A\u{0}B", "a key contains a NUL byte"),
        ] {
            let e = check(json!({"command": "sh", "env": {"OK": "1", key: "secret-value"}}))
                .unwrap_err();
            assert_eq!(e.path, "params.env");
            assert_eq!(e.rule, rule);
            let msg = e.to_error_object();
            assert_eq!(msg.code, -32602);
            assert!(
                !msg.message.contains("secret-value") && !msg.message.contains("/etc"),
                "{msg:?}"
            );
        }
        let e = check(json!({"command": "sh", "env": {"A": "x\u{0}"}})).unwrap_err();
        assert_eq!(e.rule, "a value contains a NUL byte");
        let e = check(json!({"command": "sh", "args": ["ok", "b\u{0}d"]})).unwrap_err();
        assert_eq!(e.to_string(), "params.args[1]: contains a NUL byte");
        assert_eq!(check(json!({"command": ""})).unwrap_err().path, "params.command");
        assert_eq!(
            check(json!({"command": "sh", "cwd": "/a\u{0}"})).unwrap_err().path,
            "params.cwd"
        );
    }

    #[test]
    fn sizes_are_bounded() {
        let long = "a".repeat(MAX_EXECUTE_STRING_BYTES + 1);
        assert_eq!(
            check(json!({"command": "sh", "args": [long]})).unwrap_err().path,
            "params.args[0]"
        );
        let many: serde_json::Map<String, serde_json::Value> =
            (0..100_000).map(|i| (format!("K{i}"), json!("v"))).collect();
        let e = check(json!({"command": "sh", "env": many})).unwrap_err();
        assert_eq!(e.to_string(), "params.env: more than 10000 variables");
        let big: serde_json::Map<String, serde_json::Value> =
            (0..100).map(|i| (format!("K{i}"), json!("v".repeat(20_000)))).collect();
        assert_eq!(
            check(json!({"command": "sh", "env": big})).unwrap_err().rule,
            "larger than 1048576 bytes"
        );
        let args: Vec<String> = (0..20).map(|_| "a".repeat(100_000)).collect();
        assert_eq!(
            check(json!({"command": "sh", "args": args})).unwrap_err().rule,
            "command and args exceed 1048576 bytes"
        );
        // Exactly at the bound passes.
        let at = "a".repeat(MAX_EXECUTE_STRING_BYTES);
        check(json!({"command": "sh", "args": [at]})).unwrap();
    }

    #[test]
    fn params_of_another_shape_are_left_to_the_hook() {
        assert_eq!(check_execute_params_json("[1]"), Ok(()));
        assert_eq!(check_execute_params_json(r#"{"command": 3}"#), Ok(()));
        assert_eq!(check_execute_params_json(r#"{"args": ["a"]}"#), Ok(()));
    }
}
