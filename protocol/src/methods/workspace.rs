//! environmentRealizeWorkspace and environmentRunnerIngressEndpoint (protocol.md D.8, D.11).
