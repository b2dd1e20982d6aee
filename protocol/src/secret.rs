//! A secret value that is never printed or serialized in clear.
