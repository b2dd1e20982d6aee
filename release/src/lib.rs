//! Release checks of the paperclip-sandbox workspace; everything is in `tests/`:
//!
//! - `public_api.rs`: the public API of `paperclip-sandbox-protocol`, `paperclip-sandbox-sdk`
//!   and `paperclip-sandbox-conformance` against the snapshots in `release/api/`
//!   (`UPDATE_SNAPSHOTS=1 cargo test -p paperclip-sandbox-release --test public_api` rewrites
//!   them);
//! - `manifests.rs`: which crates publish, their crates.io and docs.rs metadata, that `.ci/run`'s
//!   MSRV build uses the declared `rust-version`, and that every locked dependency of a
//!   published crate builds on it;
//! - `book_dependencies.rs`: every chapter's Rust code compiles in a crate that depends only on
//!   what the chapter's `cargo add` lines name.
