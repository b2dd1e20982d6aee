//! Compile-time UI tests of `#[derive(PluginManifest)]` and `#[provider]`: every case in
//! `ui/fail/` must fail with exactly its reviewed `.stderr` (rustc 1.95), every case in
//! `ui/pass/` must compile and run. `TRYBUILD=overwrite cargo test -p paperclip-sandbox-sdk
//! --test ui` rewrites the `.stderr` files; review the diff before committing.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
