//! Interactive setup and template methods (protocol.md D.12).
