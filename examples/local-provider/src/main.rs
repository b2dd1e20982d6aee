//! Local-directory example provider.

fn main() {}
