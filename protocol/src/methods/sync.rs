//! environmentSyncIn / environmentSyncOut (protocol.md D.10, decisions.md D7).
