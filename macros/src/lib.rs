//! Derive and attribute macros for `paperclip-sandbox` providers (see the SDK crate).
