//! `sandbox-conformance` command-line tool.

fn main() {}
