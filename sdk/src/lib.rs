//! Write a Paperclip sandbox-provider plugin worker in Rust.

pub use paperclip_sandbox_protocol as protocol;
