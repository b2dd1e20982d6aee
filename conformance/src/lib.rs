//! Conformance harness for Paperclip sandbox-provider workers.
pub mod package;
