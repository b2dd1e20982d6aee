//! JSON-RPC error codes: the standard ones and Paperclip's plugin codes.

use std::fmt;

/// The named codes, written once: the enum, [`ErrorCode::ALL`] (in this order),
/// [`ErrorCode::code`] and [`ErrorCode::name`].
macro_rules! error_codes {
    ($( $(#[$doc:meta])* $variant:ident = $code:literal, $name:literal; )*) => {
        /// A JSON-RPC error code known to the Paperclip protocol.
        ///
        /// The wire carries a bare integer ([`crate::jsonrpc::ErrorObject::code`]); this enum
        /// names the integers the host and the published SDK give a meaning to. A provider may
        /// answer any other integer, which the host passes through unchanged.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $( $(#[$doc])* $variant, )*
        }

        impl ErrorCode {
            /// Every named code, in the order of the published SDK's `PLUGIN_RPC_ERROR_CODES`.
            pub const ALL: [ErrorCode; [$(ErrorCode::$variant,)*].len()] =
                [$(ErrorCode::$variant,)*];

            /// The integer on the wire.
            pub const fn code(self) -> i64 {
                match self { $( ErrorCode::$variant => $code, )* }
            }

            /// The constant name used by the published SDK (`PARSE_ERROR`,
            /// `METHOD_NOT_IMPLEMENTED`, …).
            pub const fn name(self) -> &'static str {
                match self { $( ErrorCode::$variant => $name, )* }
            }
        }
    };
}

error_codes! {
    /// `-32700`: the line is not valid JSON or not a JSON-RPC 2.0 object.
    ParseError = -32700, "PARSE_ERROR";
    /// `-32600`: the message is not a valid request (also: an oversize frame, D10).
    InvalidRequest = -32600, "INVALID_REQUEST";
    /// `-32601`: the method is not known to the worker at all.
    MethodNotFound = -32601, "METHOD_NOT_FOUND";
    /// `-32602`: the params are malformed (for example an invalid `minimumTimeoutMs`, D7).
    InvalidParams = -32602, "INVALID_PARAMS";
    /// `-32603`: an internal error (for example a handler that panicked).
    InternalError = -32603, "INTERNAL_ERROR";
    /// `-32000`: the worker process is not available (host side).
    WorkerUnavailable = -32000, "WORKER_UNAVAILABLE";
    /// `-32001`: the plugin lacks the manifest capability for a call.
    CapabilityDenied = -32001, "CAPABILITY_DENIED";
    /// `-32002`: a handler failed without a numeric code of its own.
    WorkerError = -32002, "WORKER_ERROR";
    /// `-32003`: the call timed out.
    Timeout = -32003, "TIMEOUT";
    /// `-32004`: a known method whose hook the plugin does not implement.
    MethodNotImplemented = -32004, "METHOD_NOT_IMPLEMENTED";
    /// `-32005`: a worker→host call outside the invocation's scope.
    InvocationScopeDenied = -32005, "INVOCATION_SCOPE_DENIED";
    /// `-32006`: a config read across tenants.
    CrossTenantConfig = -32006, "CROSS_TENANT_CONFIG";
    /// `-32099`: an unknown plugin error.
    Unknown = -32099, "UNKNOWN";
}

impl ErrorCode {
    /// The code for a wire integer, if it is one of the named codes.
    pub fn from_code(code: i64) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.code() == code)
    }

    /// True for the Paperclip plugin codes (`PLUGIN_RPC_ERROR_CODES`), which a host handler may
    /// pass through unchanged.
    pub const fn is_plugin_code(self) -> bool {
        matches!(self.code(), -32099 | -32006..=-32000)
    }
}

impl From<ErrorCode> for i64 {
    fn from(code: ErrorCode) -> i64 {
        code.code()
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_match_protocol_table() {
        let table = [
            (-32700, "PARSE_ERROR"),
            (-32600, "INVALID_REQUEST"),
            (-32601, "METHOD_NOT_FOUND"),
            (-32602, "INVALID_PARAMS"),
            (-32603, "INTERNAL_ERROR"),
            (-32000, "WORKER_UNAVAILABLE"),
            (-32001, "CAPABILITY_DENIED"),
            (-32002, "WORKER_ERROR"),
            (-32003, "TIMEOUT"),
            (-32004, "METHOD_NOT_IMPLEMENTED"),
            (-32005, "INVOCATION_SCOPE_DENIED"),
            (-32006, "CROSS_TENANT_CONFIG"),
            (-32099, "UNKNOWN"),
        ];
        for (n, name) in table {
            let code = ErrorCode::from_code(n).expect("named code");
            assert_eq!(code.code(), n);
            assert_eq!(code.name(), name);
        }
        assert_eq!(ErrorCode::from_code(-32042), None);
        assert!(ErrorCode::Unknown.is_plugin_code());
        assert!(ErrorCode::CrossTenantConfig.is_plugin_code());
        assert!(!ErrorCode::InternalError.is_plugin_code());
    }
}
