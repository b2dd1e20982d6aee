//! The plugin manifest as a sandbox provider sees it (protocol.md C) and its validator with the
//! two host profiles (decisions.md D1–D3).
