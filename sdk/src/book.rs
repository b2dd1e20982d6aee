//! The book (`book/src`) as doctests: every chapter listed in `book/src/SUMMARY.md` is included
//! here, so each Rust block of the book compiles and runs under `cargo test -p
//! paperclip-sandbox-sdk --doc`. `sdk/tests/book_coverage.rs` checks that no chapter is missing.
#![cfg(doctest)]

macro_rules! chapters {
    ($($name:ident => $path:literal,)*) => {
        $(
            #[doc = include_str!(concat!("../../book/src/", $path))]
            pub struct $name;
        )*
    };
}

chapters! {
    Introduction => "introduction.md",
    QuickStart => "quick-start.md",
    Wire => "wire.md",
    CapabilityContract => "capability-contract.md",
    Lifecycle => "lifecycle.md",
    NewerMethods => "newer-methods.md",
    FileSync => "file-sync.md",
    Errors => "errors.md",
    Timeouts => "timeouts.md",
    RuntimeRequirements => "runtime-requirements.md",
    Sdk => "sdk.md",
    RemoteBackend => "remote-backend.md",
    Manifest => "manifest.md",
    Testing => "testing.md",
    Ci => "ci.md",
    StatefulChaos => "stateful-chaos.md",
    Packaging => "packaging.md",
    Kubernetes => "kubernetes.md",
    Troubleshooting => "troubleshooting.md",
    ReferenceMethods => "reference/methods.md",
    ReferenceSchemas => "reference/schemas.md",
    ReferenceChecks => "reference/checks.md",
    DesignDecisions => "design-decisions.md",
}
