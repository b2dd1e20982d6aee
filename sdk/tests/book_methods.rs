//! The book's method reference (`book/src/reference/methods.md`) is generated from the method
//! table: the hooks, their params and result types and their descriptions come from the
//! protocol crate's `method_table!(hooks …)` (the same expansion that writes the
//! `SandboxProvider` trait), the family, profile and upstream status from `METHODS`, and the
//! capabilities each method serves from `CAPABILITIES`. The test fails when the page differs
//! from the table; `UPDATE_SNAPSHOTS=1` rewrites it.

use std::fmt::Write as _;
use std::path::Path;

use paperclip_sandbox_sdk::protocol::capabilities::CAPABILITIES;
use paperclip_sandbox_sdk::protocol::methods::{MethodFamily, Upstream, METHODS};

/// One hooked request of the table, as the hooks expansion hands it over.
struct HookRow {
    marker: &'static str,
    hook: &'static str,
    params: &'static str,
    result: &'static str,
    /// `stringify!` of the row's doc attributes.
    docs: &'static str,
}

/// The callback `method_table!(hooks …)` calls: one [`HookRow`] per hooked request.
macro_rules! table_rows {
    (
        methods { $( $(#[$doc:meta])* $marker:ident $hook:ident($params:ident $(<$cfg:ident>)?) -> $result:ty; )* }
        notifications { $( $nhook:ident $nwire:literal; )* }
    ) => {
        fn hook_rows() -> Vec<HookRow> {
            vec![$(HookRow {
                marker: stringify!($marker),
                hook: stringify!($hook),
                params: concat!(stringify!($params) $(, "<", stringify!($cfg), ">")?),
                result: stringify!($result),
                docs: stringify!($(#[$doc])*),
            },)*]
        }
        fn notification_hooks() -> Vec<(&'static str, &'static str)> {
            vec![$((stringify!($nhook), $nwire),)*]
        }
    };
}
pub(crate) use table_rows;

paperclip_sandbox_sdk::protocol::method_table! { hooks crate::table_rows }

/// The text of `#[doc = …]` attributes as `stringify!` writes them (doc comments are raw string
/// literals, `r"…"` or `r#"…"#`; plain literals may have escapes), joined into one line.
fn doc_text(attrs: &str) -> String {
    let mut out = Vec::new();
    let mut rest = attrs;
    while let Some(start) = rest.find("doc") {
        rest = rest[start + 3..].trim_start();
        let Some(after_eq) = rest.strip_prefix('=') else { continue };
        rest = after_eq.trim_start();
        let (text, used) = if let Some(raw) = rest.strip_prefix('r') {
            let hashes = raw.len() - raw.trim_start_matches('#').len();
            let body = &raw[hashes + 1..];
            let close = format!("\"{}", "#".repeat(hashes));
            let end = body.find(&close).unwrap_or(body.len());
            (body[..end].to_owned(), 1 + hashes + 1 + end + close.len())
        } else if let Some(body) = rest.strip_prefix('"') {
            let mut text = String::new();
            let mut chars = body.char_indices();
            let mut end = body.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => match chars.next() {
                        Some((_, 'n' | 't')) => text.push(' '),
                        Some((_, c @ ('"' | '\\' | '\''))) => text.push(c),
                        other => panic!("an escape the page generator does not decode: {other:?}"),
                    },
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => text.push(c),
                }
            }
            (text, 1 + end)
        } else {
            continue;
        };
        out.push(text.trim().to_owned());
        rest = &rest[used.min(rest.len())..];
    }
    out.join(" ")
}

/// A table cell: pipes escaped, so a description cannot split the row.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

fn upstream(u: Upstream) -> &'static str {
    match u {
        Upstream::Published => "published SDK",
        Upstream::Newest => "newest sources",
        Upstream::SchemaUnknown => "named, schema unpublished",
        _ => "?",
    }
}

fn family(f: MethodFamily) -> &'static str {
    match f {
        MethodFamily::Handshake => "handshake",
        MethodFamily::Environment => "environment",
        MethodFamily::OtherPlugin => "other plugin",
        _ => "?",
    }
}

/// The `sandboxCapabilities` keys that need `name` advertised.
fn capabilities_of(name: &str) -> String {
    let keys: Vec<String> = CAPABILITIES
        .iter()
        .filter(|c| c.required.iter().any(|group| group.contains(&name)))
        .map(|c| format!("`{}`", c.key))
        .collect();
    if keys.is_empty() {
        "-".to_owned()
    } else {
        keys.join(", ")
    }
}

fn render() -> String {
    let rows = hook_rows();
    let mut page = String::new();
    page.push_str(
        "# The method reference\n\n\
         <!-- Generated from the protocol crate's method table. Do not edit: run \
         `UPDATE_SNAPSHOTS=1 cargo test -p paperclip-sandbox-sdk --test book_methods`. -->\n\n",
    );
    let hooked = METHODS.iter().filter(|m| m.hook.is_some()).count();
    writeln!(
        page,
        "A worker knows {} host→worker methods; {hooked} of them have a hook of \
         `SandboxProvider`. The order is the order of `supportedMethods`. *Since* is the oldest \
         host profile that sends the method; *Upstream* says where Paperclip defines it (the \
         published `@paperclipai/plugin-sdk` of September 2026, or only the newest \
         paperclipai/paperclip sources); *Capabilities* are the `sandboxCapabilities` keys the \
         host grants only when the method is advertised (see [The capability \
         contract](../capability-contract.md)). A hook's params are generic over the provider's \
         config type where the table writes `<Config>`; the SDK answers every hook that is not \
         written with -32004.\n",
        METHODS.len()
    )
    .unwrap();
    page.push_str("## Provider hooks\n\n");
    page.push_str(
        "| Wire method | Hook | Params → result | Since | Upstream | Capabilities | What it does |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for info in METHODS.iter().filter(|m| m.hook.is_some()) {
        let row = rows.iter().find(|r| Some(r.hook) == info.hook).unwrap_or_else(|| {
            panic!("{} has a hook the hooks expansion does not list", info.name)
        });
        assert_eq!(row.marker, format!("{:?}", info.method), "marker of {}", info.name);
        writeln!(
            page,
            "| `{}` | `{}` | `{}` → `{}` | {} | {} | {} | {} |",
            info.name,
            row.hook,
            row.params,
            row.result,
            info.since,
            upstream(info.upstream),
            capabilities_of(info.name),
            cell(&doc_text(row.docs)),
        )
        .unwrap();
    }
    page.push_str("\n## Notification hooks\n\n| Notification | Hook |\n|---|---|\n");
    for (hook, wire) in notification_hooks() {
        writeln!(page, "| `{wire}` | `{hook}` |").unwrap();
    }
    page.push_str(
        "\n## Methods without a hook of their own\n\n\
         A worker knows these names, so it never answers them -32601 (*method not found*).\n\n\
         | Wire method | Family | Since | Upstream |\n|---|---|---|---|\n",
    );
    for info in METHODS.iter().filter(|m| m.hook.is_none()) {
        writeln!(
            page,
            "| `{}` | {} | {} | {} |",
            info.name,
            family(info.family),
            info.since,
            upstream(info.upstream)
        )
        .unwrap();
    }
    page
}

#[test]
fn the_method_reference_is_the_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../book/src/reference/methods.md");
    let want = render();
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "book/src/reference/methods.md differs from the method table; run \
         `UPDATE_SNAPSHOTS=1 cargo test -p paperclip-sandbox-sdk --test book_methods`"
    );
}

#[test]
fn every_hook_and_method_is_on_the_page() {
    let page = render();
    for info in METHODS.iter() {
        assert!(page.contains(&format!("| `{}` |", info.name)), "{} is listed", info.name);
    }
    for row in hook_rows() {
        assert!(page.contains(&format!("| `{}` |", row.hook)), "{} is listed", row.hook);
        assert!(!doc_text(row.docs).is_empty(), "{} has a description", row.hook);
    }
    assert!(
        page.contains("| `environmentExecute` | `execute` |"),
        "the execute hook serves environmentExecute"
    );
}

#[test]
fn doc_attributes_become_one_line() {
    assert_eq!(doc_text(r#"#[doc = " `a`: \"b\" c"] #[doc = " d\\e"]"#), "`a`: \"b\" c d\\e");
    assert_eq!(
        doc_text(r##"#[doc = r" raw \n"] #[doc = r#" with "quotes""#]"##),
        "raw \\n with \"quotes\""
    );
    assert_eq!(doc_text(""), "");
}
