//! Sandbox runtime requirements, judged inside a lease through `environmentExecute` (the
//! sandbox owner's side of the contract, SANDBOX-REQUIREMENTS.md): a POSIX `sh`, a `tar` round
//! trip, writable workspace, home, cache and temp directories, `node` and the CLIs the
//! operator's runs use on the PATH (probed as the host probes them, `command -v <cmd> || exit
//! 1`), and no login profile or rc file written while the host drives a lease.

use paperclip_sandbox_protocol::methods::name;
use serde_json::{json, Value};

use crate::checks::execute::lease;
use crate::context::{fail, CheckResult, Ctx, Finding};
use crate::host::clip;
use crate::hostmodel::{self, quote, Exec, HostCall};
use crate::ledger::Lease;

fn run(ctx: &mut Ctx<'_>, lease: &Lease, exec: impl Into<Exec>) -> Result<(i64, String), Finding> {
    let r = ctx.exec(lease, &exec.into())?;
    let code = r.get("exitCode").and_then(Value::as_i64).unwrap_or(-1);
    let out = r.get("stdout").and_then(Value::as_str).unwrap_or_default().to_owned();
    let err = r.get("stderr").and_then(Value::as_str).unwrap_or_default();
    Ok((code, if err.is_empty() { out } else { format!("{out} (stderr: {})", clip(err)) }))
}

/// Runs `script` in `lease`: passes when it exits 0 and its output (stdout, plus stderr when
/// there is any) satisfies `want`, else fails with `expected` and the exit code and output.
fn expect_output(
    ctx: &mut Ctx<'_>,
    lease: &Lease,
    script: String,
    want: impl Fn(&str) -> bool,
    expected: &str,
) -> CheckResult {
    let (code, out) = run(ctx, lease, script)?;
    if code == 0 && want(&out) {
        Ok(())
    } else {
        Err(fail(expected, format!("exit {code}: {}", clip(out.trim()))))
    }
}

/// RT-SHELL-1: `sh -c` runs POSIX shell (arithmetic, `case`, functions, `$(…)`).
pub fn posix_shell(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = lease(ctx)?;
    let script = "set -e; f() { printf '%s' \"$1\"; }; x=$((2+3)); case $x in 5) f \"ok-$(printf %s $x)\";; *) exit 9;; esac";
    let expected = "`sh -c` runs a POSIX script and prints ok-5";
    expect_output(ctx, &lease, script.into(), |out| out == "ok-5", expected)
}

/// RT-SHELL-1: a `tar` round trip in the workspace (the host's sync path creates and extracts
/// archives with `tar`).
pub fn tar(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = lease(ctx)?;
    let dir =
        format!("{}/pcconf-tar-{}", hostmodel::runtime_root(ctx.env, &lease), crate::ids::hex(6));
    let script = format!(
        "set -e; d={d}; mkdir -p \"$d/src/sub\" \"$d/dst\"; printf one > \"$d/src/a\"; \
         printf two > \"$d/src/sub/b\"; tar -cf \"$d/x.tar\" -C \"$d/src\" .; \
         tar -xf \"$d/x.tar\" -C \"$d/dst\"; printf '%s,%s' \"$(cat \"$d/dst/a\")\" \"$(cat \"$d/dst/sub/b\")\"; \
         rm -rf \"$d\"",
        d = quote(&dir)
    );
    let expected = "`tar -cf` then `tar -xf` bring back a directory tree";
    expect_output(ctx, &lease, script, |out| out == "one,two", expected)
}

/// RT-SHELL-1: the workspace (remote cwd), `$HOME`, the cache (`$XDG_CACHE_HOME`, else
/// `$HOME/.cache`) and the temp directory (`$TMPDIR`, else `/tmp`) are writable.
pub fn writable_dirs(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = lease(ctx)?;
    let probe = format!("pcconf-w-{}", crate::ids::hex(6));
    let script = format!(
        "w() {{ [ -n \"$2\" ] || {{ echo \"$1: not set\"; return; }}; mkdir -p \"$2\" 2>/dev/null && \
         printf x > \"$2/{probe}\" 2>/dev/null && rm -f \"$2/{probe}\" || echo \"$1: $2 is not writable\"; }}; \
         w workspace {ws}; w home \"$HOME\"; w cache \"${{XDG_CACHE_HOME:-${{HOME:+$HOME/.cache}}}}\"; \
         w tmp \"${{TMPDIR:-/tmp}}\"",
        ws = quote(&hostmodel::remote_cwd(&lease))
    );
    let expected = "writable workspace, home ($HOME), cache ($XDG_CACHE_HOME or $HOME/.cache) \
                    and temp ($TMPDIR or /tmp) directories";
    expect_output(ctx, &lease, script, |out| out.trim().is_empty(), expected)
}

fn probe_clis(ctx: &mut Ctx<'_>, clis: &[String]) -> CheckResult {
    let lease = lease(ctx)?;
    let mut missing = vec![];
    for cli in clis {
        let (code, _) = run(ctx, &lease, format!("command -v {} || exit 1", quote(cli)))?;
        if code != 0 {
            missing.push(cli.clone());
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(fail(
            format!(
                "`command -v <cmd> || exit 1` finds {} on the sandbox's starting PATH",
                clis.join(", ")
            ),
            format!("not found: {}", missing.join(", ")),
        ))
    }
}

/// RT-NODE-1: `node` is on the PATH (SHOULD; MUST through `--require-cli node`).
pub fn node(ctx: &mut Ctx<'_>) -> CheckResult {
    probe_clis(ctx, &["node".to_owned()])
}

/// RT-CLI-1: every CLI named with `--require-cli` is on the PATH.
pub fn required_clis(ctx: &mut Ctx<'_>) -> CheckResult {
    let clis = ctx.env.options.required_clis.clone();
    probe_clis(ctx, &clis)
}

/// The login profiles and rc files of `$HOME` with their size and content checksum.
const PROFILES: &str = ".profile .bashrc .bash_profile .bash_login .zshrc .zprofile .zshenv";

fn profile_snapshot(ctx: &mut Ctx<'_>, lease: &Lease) -> Result<String, Finding> {
    let script = format!(
        "[ -n \"$HOME\" ] || exit 0; for f in {PROFILES}; do p=\"$HOME/$f\"; \
         if [ -e \"$p\" ]; then printf '%s %s %s\\n' \"$f\" \"$(wc -c < \"$p\")\" \"$(cksum < \"$p\" 2>/dev/null | cut -d' ' -f1)\"; fi; done"
    );
    let (code, out) = run(ctx, lease, script)?;
    if code != 0 {
        return Err(fail(
            "listing the login profiles of $HOME succeeds",
            format!("exit {code}: {out}"),
        ));
    }
    Ok(out)
}

/// The login profiles and rc files of `$HOME` modified since the acquire call was sent, by
/// the sandbox's own clock (its `date +%s` against each file's modification time, so a clock
/// that differs from the harness's does not matter). Taken right after acquire: a file in
/// the window was written while the lease was acquired.
fn recent_profiles(
    ctx: &mut Ctx<'_>,
    lease: &Lease,
    acquire_sent: std::time::Instant,
) -> Result<Vec<String>, Finding> {
    // The sandbox prints each profile's age by its own clock; the harness judges it once the
    // answer is in, against the time since the acquire call was sent (an upper bound of how
    // long ago a file written during the acquire can be, exec start-up included).
    let script = format!(
        "[ -n \"$HOME\" ] || exit 0; now=$(date +%s); for f in {PROFILES}; do p=\"$HOME/$f\"; \
         [ -e \"$p\" ] || continue; m=$(date -r \"$p\" +%s 2>/dev/null || stat -c %Y \"$p\" 2>/dev/null) \
         || continue; [ -n \"$m\" ] && echo \"$((now - m)) $f\"; done; exit 0"
    );
    let (code, out) = run(ctx, lease, script)?;
    if code != 0 {
        return Err(fail(
            "listing the login profiles of $HOME succeeds",
            format!("exit {code}: {out}"),
        ));
    }
    // Whole-second times on both sides: one second of slack. A negative age (a file dated in
    // the sandbox's future, e.g. an image built on a skewed clock) was not written now.
    let window_s = acquire_sent.elapsed().as_secs() + 1;
    let recent = |line: &str| {
        let (age, file) = line.trim().split_once(' ')?;
        let age: i64 = age.parse().ok()?;
        (0..=window_s as i64).contains(&age).then(|| file.to_owned())
    };
    Ok(out.lines().filter_map(recent).collect())
}

/// Uploads a small file into the lease's runtime root as the host would for this worker:
/// environmentSyncIn where the host syncs natively, else its base64 upload over
/// `environmentExecute` stdin.
fn host_upload(ctx: &mut Ctx<'_>, lease: &Lease) -> CheckResult {
    let target = format!(
        "{}/pcconf-profile-upload-{}.txt",
        hostmodel::runtime_root(ctx.env, lease),
        crate::ids::hex(6)
    );
    let body = b"uploaded by the host\n";
    if hostmodel::host_makes(HostCall::NativeSync, ctx.facts, ctx.env.options.profile).is_ok() {
        let source = std::env::temp_dir().join(format!("pcconf-upload-{}", crate::ids::hex(12)));
        std::fs::write(&source, body).map_err(|e| {
            Finding::Skip(format!("the harness cannot prepare {}: {e}", source.display()))
        })?;
        let mut params = ctx.lease_params(lease);
        params.insert(
            "operations".into(),
            json!([{
                "operationId": format!("pcconf-profile-{}", crate::ids::hex(6)),
                "files": [{"sourcePath": source.display().to_string(), "targetPath": target,
                           "kind": "file"}],
            }]),
        );
        let sent = ctx.call_ok(
            name::ENVIRONMENT_SYNC_IN,
            Value::Object(params),
            "environmentSyncIn of one file succeeds",
        );
        let _ = std::fs::remove_file(&source);
        return sent.map(drop);
    }
    for (script, stdin) in hostmodel::upload_steps(&target, body) {
        let mut exec = Exec::sh(script);
        exec.stdin = stdin;
        let (code, out) = run(ctx, lease, exec)?;
        if code != 0 {
            return Err(fail("the host's base64 upload succeeds", format!("exit {code}: {out}")));
        }
    }
    Ok(())
}

/// RT-PROFILE-1: no login profile or rc file appears or changes in the sandbox home across a
/// lease's life as the host drives it: during `environmentAcquireLease` (a profile modified
/// within the acquire call, judged by the sandbox's clock in the first command after it), and
/// from that first command through realize, one-shot and session commands, a command with
/// stdin, and a file upload in the host's shape (native sync, else base64 over execute). A
/// release is not part of it: after one the lease may be gone, and nothing could look.
pub fn no_login_profile(ctx: &mut Ctx<'_>) -> CheckResult {
    let acquire_sent = std::time::Instant::now();
    let lease = ctx.acquire()?;
    let during_acquire = recent_profiles(ctx, &lease, acquire_sent)?;
    if !during_acquire.is_empty() {
        return Err(fail(
            format!("no login profile or rc file ({PROFILES}) is written in $HOME while the lease is acquired"),
            format!(
                "modified within the acquire call: {} (the runtime never writes a profile; the \
                 sandbox owner supplies a ready PATH)",
                during_acquire.join(", ")
            ),
        ));
    }
    let before = profile_snapshot(ctx, &lease)?;
    ctx.realize(&lease)?;
    for exec in [
        Exec::sh("true"),
        Exec::sh("printf x").on_session(),
        Exec::sh("command -v sh >/dev/null"),
        Exec::sh("exit 0").stdin("payload\n"),
    ] {
        ctx.exec(&lease, &exec)?;
    }
    host_upload(ctx, &lease)?;
    let after = profile_snapshot(ctx, &lease)?;
    if before == after {
        return Ok(());
    }
    let changed: Vec<&str> = after.lines().filter(|l| !before.lines().any(|b| b == *l)).collect();
    Err(fail(
        format!("no login profile or rc file ({PROFILES}) appears or changes in $HOME"),
        format!(
            "changed during the lease: {} (the runtime never writes a profile; the sandbox owner \
             supplies a ready PATH)",
            changed
                .iter()
                .map(|l| l.split(' ').next().unwrap_or_default())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ))
}
