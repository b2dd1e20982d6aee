//! Worker→host calls a provider may make: `log`, `config.get` (protocol.md A.6, A.7).
