//! Lease lifecycle: validateConfig, probe, acquire, resume, release, destroy, stop
//! (protocol.md D.1–D.7).
