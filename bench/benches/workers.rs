//! `cargo bench -p paperclip-sandbox-bench`: the three-worker comparison (see the crate docs).

fn main() -> std::io::Result<()> {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs bench targets without
    // it, and must not start a minute-long benchmark.
    if !std::env::args().any(|a| a == "--bench") {
        println!("paperclip-sandbox-bench: run it with `cargo bench -p paperclip-sandbox-bench`");
        return Ok(());
    }
    paperclip_sandbox_bench::run(&paperclip_sandbox_bench::Config::default())
}
