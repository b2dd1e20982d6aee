//! JSON Schemas of every message type and of the manifest.
