//! The book's reference pages, generated from the harness's own tables.
//!
//! - [`render_markdown`]: `book/src/reference/checks.md`, the catalogue of requirements and
//!   checks, from [`REQUIREMENTS`], [`crate::registry::all`] and [`CONTRACT_ONLY`].
//! - [`render_schema_index`]: `book/src/reference/schemas.md`, an index of the protocol's
//!   JSON Schemas (`protocol::schema::message_schemas`).
//!
//! Every requirement is defined in exactly one chapter of the book, as a quoted block
//! `> **ID** (LEVEL…) statement` after an anchor `<a id="id-in-lowercase">`; [`chapter_of`]
//! says which one. `conformance/tests/book_catalogue.rs` checks the book against these tables
//! and the committed pages against these renderers.

use std::fmt::Write;

use paperclip_sandbox_protocol::schema::message_schemas;
use serde_json::Value;

use crate::registry::{all, describe_needs, Check};
use crate::requirements::{Level, Requirement, REQUIREMENTS};

/// A requirement of the contract that the harness cannot observe over the wire. It is defined
/// in the book like any other, and listed on the catalogue page without a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContractOnly {
    /// Stable id, e.g. `CAP-OPTIN-1`.
    pub id: &'static str,
    /// MUST or SHOULD.
    pub level: Level,
    /// A one-line summary (the book states the rule in full).
    pub summary: &'static str,
}

const fn contract(id: &'static str, level: Level, summary: &'static str) -> ContractOnly {
    ContractOnly { id, level, summary }
}

use Level::{Must, Should};

/// The contract-only requirements, in book order.
#[rustfmt::skip]
pub const CONTRACT_ONLY: &[ContractOnly] = &[
    contract("CAP-RESOLVE-1", Must, "A capability is granted only when verified, declared and not narrowed."),
    contract("CAP-OPTIN-1", Must, "An omitted opt-in key never grants its capability."),
    contract("CAP-LEGACY-1", Must, "A nested `reusableLeases` wins over the legacy `supportsReusableLeases`."),
    contract("CAP-NARROW-1", Must, "A narrowing only removes capabilities."),
    contract("CAP-FAILCLOSED-1", Must, "Config-resolution and identity failures turn capabilities off."),
    contract("LIFE-EXPIRY-1", Must, "`requestedExpiresAt` is honoured and the real expiry returned, or no expiry at all."),
    contract("EXEC-BYPASS-1", Must, "`bypassSession: true` runs one-shot, outside any session."),
    contract("LIFE-RECEIPT-1", Must, "A termination receipt only after the end of execution is confirmed."),
    contract("SYNC-ATOMIC-1", Must, "File mappings replace atomically; no world-readable window on the host."),
    contract("SYNC-FAIL-1", Must, "Sync fails loudly, never widens paths, streams instead of buffering."),
    contract("SYNC-MIN-1", Must, "Transfers may take max(`minimumTimeoutMs`, configured); invalid minimums get -32602."),
    contract("ENV-CLEANUP-1", Must, "An uncertain allocation fails the acquire with the creation-cleanup envelope."),
    contract("ENV-DIAG-1", Should, "An acquisition that ran out of budget attaches a diagnostic with elapsedMs >= budgetMs."),
    contract("SECRET-2", Must, "No secret in lease metadata, probe results or any other result."),
    contract("TIME-ENFORCE-1", Must, "The provider enforces its own timeouts before the host's timer fires."),
    contract("RT-PATH-1", Must, "`node` and the agent CLIs resolve on the starting PATH; no profile edits, no nvm."),
    contract("RT-TOOLS-1", Must, "Without native sync, the sandbox has `base64`, `dd`, `wc`, `mv`, `mkdir`, `rm`."),
    contract("RT-BWRAP-1", Must, "The advisory bwrap wrapper degrades to the plain command and claims no security."),
    contract("MAN-VERSION-1", Must, "Adding a driver field bumps the manifest version."),
];

/// A chapter of the book that defines requirements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chapter {
    /// The file under `book/src`.
    pub file: &'static str,
    /// The chapter's title.
    pub title: &'static str,
}

const WIRE: Chapter = Chapter { file: "wire.md", title: "Talking to the host" };
const CONTRACT: Chapter =
    Chapter { file: "capability-contract.md", title: "The capability contract" };
const LIFECYCLE: Chapter = Chapter { file: "lifecycle.md", title: "Lifecycle methods" };
const SYNC: Chapter = Chapter { file: "file-sync.md", title: "File sync" };
const ERRORS: Chapter = Chapter { file: "errors.md", title: "Errors, envelopes and secrets" };
const TIMEOUTS: Chapter = Chapter { file: "timeouts.md", title: "Timeouts" };
const RUNTIME: Chapter =
    Chapter { file: "runtime-requirements.md", title: "Sandbox runtime requirements" };
const NEWER: Chapter =
    Chapter { file: "newer-methods.md", title: "Idle sleep, tasks and byte streams" };
const STATEFUL: Chapter = Chapter { file: "stateful-chaos.md", title: "Stateful and chaos runs" };
const MANIFEST: Chapter =
    Chapter { file: "manifest.md", title: "The manifest derive and its compile errors" };

/// Which chapter defines a requirement, by id prefix; the first match wins.
const CHAPTER_BY_PREFIX: &[(&str, Chapter)] = &[
    ("WIRE-", WIRE),
    ("INIT-", WIRE),
    ("SHUT-", WIRE),
    ("MAN-REMOVED-", CONTRACT),
    ("CAP-", CONTRACT),
    ("LIFE-", LIFECYCLE),
    ("LEDGER-", LIFECYCLE),
    ("EXEC-", LIFECYCLE),
    ("SYNC-", SYNC),
    ("ENV-", ERRORS),
    ("SECRET-", ERRORS),
    ("TIME-", TIMEOUTS),
    ("RT-", RUNTIME),
    ("IDLE-", NEWER),
    ("TASK-", NEWER),
    ("DUPLEX-", NEWER),
    ("LOGIN-", NEWER),
    ("MAN-", MANIFEST),
    ("STATE-", STATEFUL),
    ("CHAOS-", STATEFUL),
];

/// Every chapter that defines requirements.
pub fn chapters() -> Vec<Chapter> {
    let mut out: Vec<Chapter> = Vec::new();
    for (_, chapter) in CHAPTER_BY_PREFIX {
        if !out.contains(chapter) {
            out.push(*chapter);
        }
    }
    out
}

/// The chapter that defines requirement `id`.
pub fn chapter_of(id: &str) -> Option<Chapter> {
    CHAPTER_BY_PREFIX.iter().find(|(prefix, _)| id.starts_with(prefix)).map(|(_, c)| *c)
}

/// The anchor of requirement `id` in its chapter: the id in lowercase.
pub fn anchor(id: &str) -> String {
    id.to_ascii_lowercase()
}

/// A link to the definition of `id`, relative to `book/src/reference/`.
fn link(id: &str) -> String {
    match chapter_of(id) {
        Some(c) => format!("[{id}](../{}#{})", c.file, anchor(id)),
        None => id.to_owned(),
    }
}

/// Escapes a table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn checks_of(req: &Requirement) -> Vec<&'static Check> {
    all().filter(|c| c.requirement == req.id).collect()
}

/// The header every generated page starts with.
fn generated_note(out: &mut String, function: &str) {
    let _ = writeln!(
        out,
        "<!-- Generated by `{function}()` of the harness's catalogue (crate-private). Do not edit: \
         run `UPDATE_SNAPSHOTS=1 cargo test -p paperclip-sandbox-conformance --test book_catalogue`. -->\n"
    );
}

/// The catalogue page: every requirement with its level, statement, checks, gating, contract
/// reference and defining chapter; every check; every contract-only requirement.
pub fn render_markdown() -> String {
    let mut out = String::from("# The catalogue of checks\n\n");
    generated_note(&mut out, "render_markdown");
    let must = REQUIREMENTS.iter().filter(|r| r.level == Level::Must).count();
    let _ = writeln!(
        out,
        "`sandbox-conformance run` judges {} requirements ({must} MUST, {} SHOULD) with {} \
         checks. A run fails when a MUST requirement fails. A check runs only when its \
         preconditions hold (*Gated on*); otherwise it is skipped with the reason. \
         A check whose prerequisite failed (`lifecycle.acquire`, `lifecycle.realize`, \
         `handshake.initialize`) is BLOCKED, naming it: one root cause, one failure. \
         `sandbox-conformance run --list` prints the same catalogue. *Public reference* names \
         the upstream Paperclip document and section (or the published SDK file) that states \
         the rule.\n",
        REQUIREMENTS.len(),
        REQUIREMENTS.len() - must,
        all().count(),
    );

    out.push_str("## Requirements checked over the wire\n\n");
    out.push_str("| Requirement | Level | Statement | Checks | Gated on | Public reference |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for req in REQUIREMENTS {
        let checks = checks_of(req);
        let ids: Vec<String> = checks.iter().map(|c| format!("`{}`", c.id)).collect();
        let gates: Vec<String> = checks.iter().map(|c| describe_needs(c)).collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            link(req.id),
            req.level,
            cell(req.statement),
            if ids.is_empty() { "none".to_owned() } else { ids.join(", ") },
            cell(&gates.join("; ")),
            cell(req.reference),
        );
    }

    out.push_str("\n## Checks, in running order\n\n");
    out.push_str("| Check | Requirement | Level | What it does | Worker |\n");
    out.push_str("|---|---|---|---|---|\n");
    for check in all() {
        let scope = match check.scope {
            crate::registry::Scope::Main => "shared worker",
            crate::registry::Scope::Fresh => "fresh workers",
            crate::registry::Scope::Offline => "no worker (judges the run)",
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            check.id,
            link(check.requirement),
            check.level(),
            cell(check.title),
            scope,
        );
    }

    out.push_str("\n## Contract-only requirements\n\n");
    out.push_str(
        "These rules bind providers (or the host, or the sandbox image) but cannot be observed \
         over the wire, so no check judges them. The linked chapter states each in full.\n\n",
    );
    out.push_str("| Requirement | Level | Summary |\n|---|---|---|\n");
    for c in CONTRACT_ONLY {
        let _ = writeln!(out, "| {} | {} | {} |", link(c.id), c.level, cell(c.summary));
    }
    out
}

/// A short description of a schema's JSON type.
fn schema_type(schema: &Value) -> String {
    match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => {
            ts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" or ")
        }
        _ if schema.get("anyOf").is_some() || schema.get("oneOf").is_some() => {
            "one of several".into()
        }
        _ => "any".into(),
    }
}

/// The schema index page: one row per schema with its type and its required and optional
/// top-level properties.
pub fn render_schema_index() -> String {
    let schemas = message_schemas();
    let mut out = String::from("# JSON Schemas\n\n");
    generated_note(&mut out, "render_schema_index");
    let _ = writeln!(
        out,
        "The protocol crate exports a JSON Schema (draft 2020-12, every subschema inlined) for \
         the params and the result of every method, for each notification's params, and for \
         the error object, the invocation and the manifest: {} schemas. Each describes the \
         worker's side of the wire: what a worker accepts for what it receives, and what it \
         emits for what it sends. The full schemas are committed in \
         `protocol/tests/snapshots/schemas.json`, and a test fails when a wire shape changes.\n",
        schemas.len()
    );
    out.push_str(
        "The examples in this chapter use these dependencies (from crates.io; the SDK's git and checkout\n\
         sources are in the [Quick start](../quick-start.md#1-install-the-harness-and-get-the-sdk)):\n\n\
         ```sh\ncargo add paperclip-sandbox-sdk serde_json\n```\n\n\
         Print any schema from Rust:\n\n```rust\nuse paperclip_sandbox_sdk::protocol::schema::message_schemas;\n\n\
         let schemas = message_schemas();\nlet execute = &schemas[\"environmentExecuteParams\"];\n\
         assert_eq!(execute[\"type\"], \"object\");\nprintln!(\"{}\", serde_json::to_string_pretty(execute).unwrap());\n```\n\n",
    );
    out.push_str(
        "| Schema | Type | Required properties | Optional properties |\n|---|---|---|---|\n",
    );
    for (name, schema) in &schemas {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let optional: Vec<&str> = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(String::as_str).filter(|k| !required.contains(k)).collect())
            .unwrap_or_default();
        let list = |keys: &[&str]| {
            if keys.is_empty() {
                "-".to_owned()
            } else {
                keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
            }
        };
        let _ = writeln!(
            out,
            "| `{name}` | {} | {} | {} |",
            cell(&schema_type(schema)),
            list(&required),
            list(&optional)
        );
    }
    out
}
