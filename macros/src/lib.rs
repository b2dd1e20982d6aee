//! Macros for `paperclip-sandbox` providers. Use them through the SDK's re-exports
//! (`paperclip_sandbox_sdk::provider` and `paperclip_sandbox_sdk::PluginManifest`): the
//! generated code names `::paperclip_sandbox_sdk::…`, so a provider crate needs one dependency.
//!
//! # `#[provider]`
//!
//! On `impl SandboxProvider for T { … }`:
//!
//! 1. records the hooks the block defines and generates `implemented_methods()` returning
//!    their wire names, and `impl ImplementedHooks for T { const METHODS: … }` with the same
//!    list, each name spelled through the protocol crate's method table
//!    (`::paperclip_sandbox_sdk::protocol::methods::Method::….as_str()`), so `supportedMethods`
//!    is exactly the set of hooks written. The hooks are the table's (`methods::HOOKS`): this
//!    crate keeps no list of its own;
//! 2. rejects, with an error at the method's name, any method that is not a hook of the trait
//!    (and a hand-written `implemented_methods`), and a `sync_in` without `sync_out` or the
//!    reverse (the host uses native sync only as a pair), reporting every such error at once;
//! 3. applies `#[async_trait]` (`::paperclip_sandbox_sdk::async_trait`) unless it is already
//!    there.
//! 4. sets `type Config = <Self as DriverConfig>::Config;` unless the block writes
//!    `type Config = …;`: the provider's config type is the `#[driver(config = T)]` type of
//!    its `#[derive(PluginManifest)]` (which implements `DriverConfig`; `JsonObject` without
//!    `config =`), so the `configSchema` and the type hooks receive cannot differ.
//!
//! `#[provider(crate = some::path)]` (or `crate = "some::path"`) replaces
//! `::paperclip_sandbox_sdk` in generated paths.
//!
//! # `#[derive(PluginManifest)]`
//!
//! On the provider struct, with a `#[plugin(…)]` and a `#[driver(…)]` attribute:
//!
//! ```text
//! #[derive(PluginManifest)]
//! #[plugin(
//!     id = "acme.rust-sandbox",             // required: ^[a-z0-9][a-z0-9._-]*$
//!     display_name = "Acme Sandbox",        // required: 1–100 characters
//!     description = "Acme's sandboxes.",    // required: 1–500 characters
//!     author = "Acme Inc.",                 // required: 1–200 characters
//!     version = "1.2.0",                    // default: env!("CARGO_PKG_VERSION") of your crate
//!     categories = ["automation"],          // default: ["automation"]
//!     worker = "./dist/worker.cjs",         // entrypoints.worker (this is the default)
//!     profile = "paperclip-2026-11",        // the target host profile (this is the default)
//!     crate = "::paperclip_sandbox_sdk",    // path of the SDK in generated code
//! )]
//! #[driver(
//!     key = "acme",                         // required: ^[a-z0-9][a-z0-9._-]*$
//!     display_name = "Acme",                // required: 1–100 characters
//!     description = "One VM per lease.",    // at most 500 characters
//!     config = AcmeConfig,                  // a JsonSchema type; default: an empty object
//!     capabilities(reusableLeases, nativeSyncIn, nativeSyncOut, incrementalSessionOutput = false),
//!     default_acquire_timeout_ms = 120_000, // paperclip-2026-11 only: 1..=86,400,000
//!     creation_operation_version = 1,       // paperclip-2026-11 only: exactly 1
//! )]
//! struct AcmeProvider;
//! ```
//!
//! It implements the SDK's `PluginManifest` trait (`PROFILE` and `manifest(profile)`), which
//! builds the manifest through `ManifestSpec`: `apiVersion` 1, the capability
//! `environment.drivers.register`, one driver of kind `sandbox_provider`, and the driver's
//! `configSchema` generated with schemars from the config type (inline, secret fields with
//! `"format": "secret-ref"`). A capability is declared `true` by its key alone or `= false`
//! explicitly.
//!
//! ## What is checked, and how
//!
//! The derive follows *parse → check → expand*. Every problem found in the attributes is
//! reported at once (`syn::Error::combine`), each at the offending token, and after errors the
//! derive still emits a dummy `PluginManifest` impl so that no second error cascades from the
//! missing impl.
//!
//! - **At expansion, with the protocol crate's own rules** (this crate depends on
//!   `paperclip-sandbox-protocol` so that no rule is re-derived): unknown, duplicate and
//!   missing arguments; capability keys looked up in the capability table (`CAPABILITIES`),
//!   with a did-you-mean suggestion for an unknown key and a dedicated "removed from the
//!   capability contract" error for `REMOVED_KEYS` (`concurrentSyncAndExec`,
//!   `concurrentSyncOperations`); a capability whose required method has no hook at all (it
//!   can never be granted); categories against `PLUGIN_CATEGORIES`; the 2026-11-only driver
//!   fields when `profile = "paperclip-2026-09"`. The derive then assembles a manifest from the
//!   literals and runs the protocol crate's validator (`manifest::validate`) for the target
//!   profile, mapping each issue's path back to the attribute token: id and driver-key
//!   patterns, text lengths, semver, `defaultAcquireTimeoutMs` in 1..=86,400,000,
//!   `creationOperationVersion` 1.
//! - **At compile time, across the two macros.** The derive cannot see the `#[provider]`
//!   block, so `#[provider]` emits `impl ImplementedHooks for T { const METHODS: &[&str] }`
//!   and the derive emits, for each requirement group of each capability declared `true`,
//!   `const _: () = if !satisfies(<T as ImplementedHooks>::METHODS,
//!   CAPABILITIES[i].required[g]) { panic!("…") };`. `satisfies` is a `const fn` over the
//!   protocol's capability table (byte-wise string comparison), so a missing hook is a
//!   const-evaluation error during `cargo check`, spanned at the capability's key in the
//!   attribute and naming the capability, the missing hook and everything the capability
//!   needs. A provider type without a `#[provider]` block fails the `ImplementedHooks` bound
//!   once, with a message saying so.
//!
//! The derive supports structs and enums without generic parameters (the compile-time checks
//! are `const` items, which cannot name a generic type).

use proc_macro::TokenStream;

mod hooks;
mod manifest;
mod provider;

/// Generates `implemented_methods()` and `ImplementedHooks` from the hooks an
/// `impl SandboxProvider` block defines, rejects methods that are not hooks and unpaired sync
/// hooks, and applies `#[async_trait]`. See the crate docs.
#[proc_macro_attribute]
pub fn provider(attr: TokenStream, item: TokenStream) -> TokenStream {
    provider::provider(attr.into(), item.into()).into()
}

/// Derives the SDK's `PluginManifest` from `#[plugin(…)]` and `#[driver(…)]`, checking the
/// declaration at compile time. See the crate docs for the syntax and the checks.
#[proc_macro_derive(PluginManifest, attributes(plugin, driver))]
pub fn derive_plugin_manifest(input: TokenStream) -> TokenStream {
    manifest::derive(input.into()).into()
}

/// Reads the value of `crate = some::path` or `crate = "some::path"`.
fn crate_path_value(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<syn::Path> {
    let value = meta.value()?;
    if value.peek(syn::LitStr) {
        value.parse::<syn::LitStr>()?.parse()
    } else {
        value.parse()
    }
}
