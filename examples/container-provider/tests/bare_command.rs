//! The literal command: `sandbox-conformance run -- target/debug/container-provider`,
//! with no `--config` and no `--env`, after `eval "$(.ci/container-engine up)"`.
//!
//! The harness starts the worker as the published Paperclip host does, with a minimal
//! environment: `DOCKER_HOST` and `PAPERCLIP_CONTAINER_IMAGE` never reach it. The provider must
//! find the engine at a standard socket and the image under its default name, which is what
//! `.ci/container-engine up` provides (it links `/run/podman/podman.sock` to its service and
//! tags the base image `paperclip-sandbox-base:latest`). The run must exit 0 under both
//! profiles and leave no container: the engine's own listing by the provider's labels,
//! before and after, through the engine the provider found.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{containers_of, target, BIN};
use container_provider::config::{standard_socket, DEFAULT_IMAGE};
use container_provider::engine::Engine;

/// Builds the `sandbox-conformance` binary into the profile directory of the provider binary.
fn harness_binary() -> PathBuf {
    let dir = Path::new(BIN).parent().unwrap();
    let repo_root = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build.args(["build", "-q", "-p", "paperclip-sandbox-conformance", "--bin"]);
    build.arg("sandbox-conformance").current_dir(repo_root);
    if dir.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    assert!(build.status().unwrap().success(), "cargo build -p paperclip-sandbox-conformance");
    let bin = dir.join("sandbox-conformance");
    assert!(bin.is_file(), "{} was not built", bin.display());
    bin
}

/// Fails (with `PAPERCLIP_CONTAINER_TESTS=require`) or says why the test cannot run.
fn cannot_run(why: &str) {
    if std::env::var("PAPERCLIP_CONTAINER_TESTS").as_deref() == Ok("require") {
        panic!("PAPERCLIP_CONTAINER_TESTS=require but {why}");
    }
    eprintln!("SKIPPED (cannot run here): {why}");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a container engine: DOCKER_HOST and PAPERCLIP_CONTAINER_IMAGE (see the README)"]
async fn the_bare_harness_command_exits_0_under_both_profiles_and_leaves_no_container() {
    let Some(_) = target() else { return };
    // Where the worker's default discovery leads (the test's own XDG_RUNTIME_DIR aside, the
    // harness passes none: the rootful socket is the one that counts here).
    let host = standard_socket();
    let engine = match Engine::connect(&host).await {
        Ok(engine) => engine,
        Err(e) => {
            return cannot_run(&format!(
                "no engine answers at the standard socket ({e}); `.ci/container-engine up` \
                 links /run/podman/podman.sock to its service when run as root"
            ))
        }
    };
    assert!(
        engine.image_present(DEFAULT_IMAGE).await.unwrap(),
        "the engine at the standard socket lacks {DEFAULT_IMAGE} (`.ci/container-engine up` tags it)"
    );
    let harness = harness_binary();
    // A company of this run's own, so another run on the engine is not taken for a leftover.
    let company = format!("conformance-bare-{}", std::process::id());
    for profile in [None, Some("paperclip-2026-09")] {
        let before = containers_of(&engine, &company).await;
        let mut cmd = Command::new(&harness);
        cmd.args(["run", "--company", &company]);
        if let Some(p) = profile {
            cmd.args(["--profile", p]);
        }
        cmd.args(["--", BIN]);
        let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
        let name = profile.unwrap_or("the default profile");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name}: the bare run failed\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let after = containers_of(&engine, &company).await;
        let left: Vec<&String> = after.iter().filter(|c| !before.contains(c)).collect();
        assert!(left.is_empty(), "{name}: the run left containers behind: {left:?}");
    }
}
