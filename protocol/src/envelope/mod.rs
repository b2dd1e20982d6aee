//! Typed `error.data` envelopes and host-side result validation (protocol.md B, D, F).
