//! initialize, health, shutdown and configChanged (protocol.md A.3, A.4).
