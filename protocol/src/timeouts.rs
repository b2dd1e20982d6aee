//! Timeout arithmetic (protocol.md A.5, G) and transient classification (G.3, decisions.md D8).
