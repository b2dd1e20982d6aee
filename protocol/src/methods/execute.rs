//! environmentExecute and the `execute.log` notification (protocol.md D.9, A.6).
