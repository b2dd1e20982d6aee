//! The plugin manifest as a sandbox provider sees it and its validator with the
//! two host profiles.
//!
//! - [`Manifest`], [`DriverDeclaration`], [`SandboxCapabilities`]: typed manifest parts with
//!   builders, for SDKs and macros that write a manifest in code.
//! - [`validate`]: the validator on raw JSON, reporting every issue as the published host
//!   validator does (paths, zod issue codes, messages, order), plus this crate's profile rules
//!   and warnings, in a [`ValidationReport`].
//!
//! ```
//! use paperclip_sandbox_protocol::manifest::{DriverDeclaration, Manifest};
//! use paperclip_sandbox_protocol::HostProfile;
//!
//! let manifest = Manifest::sandbox_provider("acme.rust-sandbox", "0.1.0", "Rust Sandbox", "./dist/worker.js")
//!     .with_driver(DriverDeclaration::sandbox_provider("rust-sbx", "Rust SBX"));
//! let report = manifest.validate(HostProfile::Paperclip2026_11);
//! assert!(report.valid, "{:?}", report.errors);
//! ```

mod report;
mod types;
mod validate;
mod vocabulary;

pub use report::{code, Issue, ValidationReport};
pub use types::{
    Category, DriverDeclaration, DriverKind, Entrypoints, Manifest, SandboxCapabilities,
    TemplateConfigBinding,
};
pub use validate::{
    validate, DRIVERS_CAPABILITY_MESSAGE, DRIVER_KEY_MESSAGE, JSON_SCHEMA_MESSAGE,
    LOGIN_ALIAS_MESSAGE, TOP_LEVEL_FIELDS,
};
pub use vocabulary::{
    CREATION_OPERATION_VERSION, DRIVER_KINDS, ENVIRONMENT_DRIVERS_REGISTER,
    MAX_DEFAULT_ACQUIRE_TIMEOUT_MS, PLUGIN_API_VERSION, PLUGIN_CAPABILITIES, PLUGIN_CATEGORIES,
};
