//! `sandbox-conformance replay FILE -- <worker command…>`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use paperclip_sandbox_conformance::process::WorkerCommand;
use paperclip_sandbox_conformance::transcript::parse_artifact;
use paperclip_sandbox_conformance::{replay, HarnessError};

/// Options of `replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A transcript written by `run --artifacts DIR` (DIR/CHECK-ID.ndjson).
    file: PathBuf,
    /// Per-request timeout in ms.
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    timeout_ms: u64,
    /// The worker command.
    #[arg(last = true, value_name = "WORKER", required = true)]
    worker: Vec<String>,
}

/// Runs `replay`; exit 0 when every answer matches the recording, 1 on differences, 2 when the
/// replay cannot run.
pub fn main(args: ReplayArgs) -> ExitCode {
    let run = || -> Result<usize, HarnessError> {
        let text =
            std::fs::read_to_string(&args.file).map_err(|e| HarnessError::io(&args.file, e))?;
        let entries = parse_artifact(&text).map_err(|e| HarnessError::BadFile {
            path: args.file.clone(),
            message: e.to_string(),
        })?;
        let command = WorkerCommand::from_argv(&args.worker)?;
        let timeout = Duration::from_millis(args.timeout_ms.max(1));
        replay::replay(&entries, &command, timeout, &mut std::io::stdout())
    };
    match run() {
        Ok(0) => {
            println!("replay: every answer matches the recording (result/error, error codes, result shapes)");
            ExitCode::SUCCESS
        }
        Ok(n) => {
            println!("replay: {n} answer(s) differ from the recording");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
