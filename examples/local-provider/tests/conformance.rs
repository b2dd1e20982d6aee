//! The conformance harness, run in process against the real `local-provider` binary: every
//! check passes under both profiles; none is skipped but the checks of methods the provider
//! does not implement (environmentTask) or the profile does not have.

use paperclip_sandbox_conformance::WorkerCommand;
use paperclip_sandbox_conformance::{assert_conformant, RunOptions};
use paperclip_sandbox_protocol::HostProfile;

#[test]
fn local_provider_passes_every_check() {
    for (profile, skips) in [
        // No environmentTask hook and no login terminal (the driver does not declare
        // supportsLoginPty): their checks skip.
        (HostProfile::Paperclip2026_11, &["newer.task-pairing", "newer.login-pty"][..]),
        // Under paperclip-2026-09 environmentStopLease, idle sleep and environmentTask do not
        // exist, so their checks skip.
        (
            HostProfile::Paperclip2026_09,
            &[
                "lifecycle.stop-keeps-files",
                "lifecycle.stop-busy-never-deletes",
                "lifecycle.stop-twice",
                "lifecycle.stop-from-fresh-worker",
                "lifecycle.export-resume",
                "newer.not-implemented",
                "newer.idle-seal",
                "newer.idle-busy",
                "newer.task-pairing",
                "newer.login-pty",
            ][..],
        ),
    ] {
        let root = tempfile::tempdir().unwrap();
        let command = WorkerCommand {
            program: env!("CARGO_BIN_EXE_local-provider").to_owned(),
            args: Vec::new(),
            env: vec![
                ("LOCAL_PROVIDER_ROOT".to_owned(), root.path().display().to_string()),
                // A small frame cap keeps the oversize check fast; it still takes the host's
                // 4 MiB base64 upload chunks (execute.stdin).
                ("LOCAL_PROVIDER_FRAME_LIMIT".to_owned(), "8388608".to_owned()),
            ],
            cwd: None,
        };
        let mut options = RunOptions::from(command);
        options.oversize_bytes = 9 * 1024 * 1024;
        // The runs need `sh` and `tar` on the sandbox PATH (runtime.required-clis).
        options.required_clis = vec!["sh".into(), "tar".into()];
        assert_conformant(options, profile, skips);
    }
}
