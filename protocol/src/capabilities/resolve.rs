//! Capability resolution: declared, verified, narrowing, effective (protocol.md E.1, decisions.md D4).
