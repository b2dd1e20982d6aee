//! Wire types and contract rules of the Paperclip sandbox-provider plugin protocol.
//!
//! This crate is the single place where a wire fact or a contract rule is written down. It has
//! no I/O and no async runtime; the SDK, the conformance harness and the macros call it.
//!
//! | Module | Contract |
//! |---|---|
//! | [`jsonrpc`] | JSON-RPC 2.0 envelope, ids, classification, Paperclip invocation keys (A.2) |
//! | [`error_code`] | standard and plugin error codes (B) |
//! | [`methods`] | method names, the method registry, params and results of every method (D) |
//! | [`manifest`] | manifest types and the strict validator per host profile (C, D1–D3) |
//! | [`profile`] | host profiles `paperclip-2026-11` and `paperclip-2026-09` (D1) |
//! | [`capabilities`] | the capability table and `verified ∩ declared ∩ narrowing` (E, D4) |
//! | [`timeouts`] | S, E, acquire budget, resume deadline, clamping, transient rules (G, D8) |
//! | [`envelope`] | creation-cleanup, acquisition diagnostic, sync error, stop error, receipts, ingress (F, D6) |
//! | [`secret`] | [`Secret`](secret::Secret): never printed, never serialized in clear |
//! | [`schema`] | JSON Schemas of every message and the manifest |

/// An enum of wire strings, written once: the enum (with the caller's attributes), `as_str`
/// (the wire value) and `Display`, plus the array `ALL` of every variant when `const ALL;`
/// follows the enum. The short form `Name { Variant = "wire", … }` is an
/// allowlist: it also derives the value traits and adds `ALL` and `from_wire`.
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $wire:literal, )* }
    ) => {
        $(#[$meta])*
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
        }

        impl $name {
            /// The wire value.
            pub const fn as_str(self) -> &'static str {
                match self { $( $name::$variant => $wire, )* }
            }
        }

        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $wire:literal, )* }
        $(#[$all_meta:meta])*
        const ALL;
    ) => {
        wire_enum! {
            $(#[$meta])*
            pub enum $name { $( $(#[$vmeta])* $variant = $wire, )* }
        }

        impl $name {
            $(#[$all_meta])*
            pub const ALL: [$name; [$($name::$variant,)*].len()] = [$($name::$variant,)*];
        }
    };
    ($(#[$meta:meta])* $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $wire:literal, )* }) => {
        wire_enum! {
            $(#[$meta])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            pub enum $name { $( $(#[$vmeta])* $variant = $wire, )* }
        }

        impl $name {
            /// Every allowlisted value, in allowlist order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The value of an allowlisted wire string.
            pub fn from_wire(s: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.as_str() == s)
            }
        }
    };
}

/// `From` impls written as one conversion each: `impl_from!(Target { Source => |v| expr, … })`.
macro_rules! impl_from {
    ($target:ty { $( $source:ty => |$v:ident| $body:expr ),* $(,)? }) => {
        $(
            impl From<$source> for $target {
                fn from($v: $source) -> Self {
                    $body
                }
            }
        )*
    };
}

pub mod capabilities;
pub mod envelope;
pub mod error_code;
pub mod json_text;
pub mod jsonrpc;
pub mod manifest;
pub mod methods;
pub mod profile;
pub mod schema;
pub mod secret;
pub mod timeouts;
pub mod wire_time;

pub use error_code::ErrorCode;
pub use profile::HostProfile;
