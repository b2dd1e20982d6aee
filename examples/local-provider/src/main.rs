//! The `local-provider` worker binary.

fn main() {}
