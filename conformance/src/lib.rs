//! Conformance harness for Paperclip sandbox-provider workers.
