//! The book's method reference (`book/src/reference/methods.md`) is generated from the method
//! table: the hooks, their params and result types and their descriptions come from the
//! protocol crate's `method_table!(hooks …)` (the same expansion that writes the
//! `SandboxProvider` trait), the family, profile and upstream status from `METHODS`, the
//! capabilities each method serves from `CAPABILITIES`, and the worker→host calls and the
//! notifications (both directions) from the table's other two sections, read through
//! `method_table!(rows …)`. The test fails when the page differs from the table;
//! `UPDATE_SNAPSHOTS=1` rewrites it.

use std::fmt::Write as _;
use std::path::Path;

use paperclip_sandbox_sdk::protocol::capabilities::CAPABILITIES;
use paperclip_sandbox_sdk::protocol::methods::{
    visit_methods, Direction, MethodFamily, MethodVisitor, RpcMethod, RpcNotification, Upstream,
    METHODS,
};

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

/// One worker→host request of the table's `host_calls` section.
struct HostCallRow {
    marker: &'static str,
    wire: &'static str,
    params: &'static str,
    result: &'static str,
    /// The marker of the same method sent as a notification, when it has one.
    notification: Option<&'static str>,
    docs: &'static str,
}

/// One row of the table's `notifications` section.
struct NotificationRow {
    wire: &'static str,
    /// `HostToWorker` or `WorkerToHost`.
    direction: &'static str,
    params: Option<&'static str>,
    hook: Option<&'static str>,
    docs: &'static str,
}

/// The callback `method_table!(rows …)` calls with the whole table: the worker→host calls and
/// the notifications as written (the requests are read through the hooks expansion above).
macro_rules! full_rows {
    (
        methods { $($methods:tt)* }
        host_calls { $(
            $(#[$hm:meta])*
            $hmarker:ident = $hwire:literal as $hkonst:ident, $hparams:ty => $hresult:ty
            $(, notification $hnote:ident)? ;
        )* }
        notifications { $(
            $(#[$nm:meta])*
            $nmarker:ident = $nwire:literal as $nkonst:ident, $ndir:ident
            $(, params $nparams:ty)? $(, hook $nhook:ident)? ;
        )* }
    ) => {
        fn host_call_rows() -> Vec<HostCallRow> {
            vec![$(HostCallRow {
                marker: stringify!($hmarker),
                wire: $hwire,
                params: stringify!($hparams),
                result: stringify!($hresult),
                notification: None $(.or(Some(stringify!($hnote))))?,
                docs: stringify!($(#[$hm])*),
            },)*]
        }
        fn notification_rows() -> Vec<NotificationRow> {
            vec![$(NotificationRow {
                wire: $nwire,
                direction: stringify!($ndir),
                params: None $(.or(Some(stringify!($nparams))))?,
                hook: None $(.or(Some(stringify!($nhook))))?,
                docs: stringify!($(#[$nm])*),
            },)*]
        }
    };
}
pub(crate) use full_rows;

paperclip_sandbox_sdk::protocol::method_table! { rows crate::full_rows }

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
         written with -32004. The last two sections list the other direction: the {} \
         worker→host calls a provider may make, and the {} notifications.\n",
        METHODS.len(),
        host_call_rows().len(),
        notification_rows().len()
            + host_call_rows().iter().filter(|c| c.notification.is_some()).count(),
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
            type_text(row.result),
            info.since,
            upstream(info.upstream),
            capabilities_of(info.name),
            cell(&doc_text(row.docs)),
        )
        .unwrap();
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
    render_host_calls(&mut page);
    render_notifications(&mut page);
    page
}

/// A type as `stringify!` writes it, with its paths closed up (`serde_json::Value`).
fn type_text(ty: &str) -> String {
    ty.replace(" :: ", "::")
}

fn direction(d: &str) -> &'static str {
    match d {
        "HostToWorker" => "host→worker",
        "WorkerToHost" => "worker→host",
        other => panic!("a direction the page generator does not know: {other}"),
    }
}

fn render_host_calls(page: &mut String) {
    page.push_str(
        "\n## Worker→host calls\n\n\
         Requests a provider sends to the host while it serves a call. Each carries the serving \
         call's `paperclipInvocationId`, so the host checks it against that call's company and \
         the manifest's `capabilities`; a refusal is the host's JSON-RPC error. The SDK's \
         `Context` has a typed method for each (`Context::log` sends `log` as a notification; \
         see [Calling the host](../newer-methods.md#calling-the-host)), and \
         `Context::request::<Marker>` calls any of them by its marker type.\n\n\
         | Wire method | Marker | Params → result | What it does |\n|---|---|---|---|\n",
    );
    for row in host_call_rows() {
        writeln!(
            page,
            "| `{}` | `{}` | `{}` → `{}` | {} |",
            row.wire,
            row.marker,
            type_text(row.params),
            type_text(row.result),
            cell(&doc_text(row.docs)),
        )
        .unwrap();
    }
}

fn render_notifications(page: &mut String) {
    page.push_str(
        "\n## Notifications\n\n\
         Messages without an answer, in both directions. The worker's stream notifications \
         (`loginPty.*`, `duplexChannel.*`) carry no invocation id: the two stream ids bind \
         them. A host→worker notification with a hook is delivered to it; the others are \
         handled by the runtime or ignored.\n\n\
         | Notification | Direction | Params | Hook | What it does |\n|---|---|---|---|---|\n",
    );
    let calls = host_call_rows();
    let as_notifications = calls.iter().filter_map(|c| {
        c.notification.map(|marker| {
            (
                c.wire,
                "WorkerToHost",
                Some(c.params),
                None,
                format!("`{marker}`: the request `{}` sent as a notification.", c.wire),
            )
        })
    });
    let rows = notification_rows();
    let own = rows.iter().map(|r| (r.wire, r.direction, r.params, r.hook, doc_text(r.docs)));
    for (wire, dir, params, hook, docs) in own.chain(as_notifications) {
        writeln!(
            page,
            "| `{wire}` | {} | {} | {} | {} |",
            direction(dir),
            params.map_or("raw JSON".to_owned(), |p| format!("`{}`", type_text(p))),
            hook.map_or("-".to_owned(), |h| format!("`{h}`")),
            cell(&docs),
        )
        .unwrap();
    }
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
    // Every marker the protocol crate generates is on the page, in its direction.
    struct Listed<'a>(&'a str, usize);
    impl MethodVisitor for Listed<'_> {
        fn method<M: RpcMethod>(&mut self) {
            assert!(self.0.contains(&format!("| `{}` |", M::NAME)), "{} is listed", M::NAME);
            self.1 += 1;
        }
        fn notification<N: RpcNotification>(&mut self) {
            let dir = match N::DIRECTION {
                Direction::HostToWorker => "host→worker",
                _ => "worker→host",
            };
            let row = format!("| `{}` | {dir} |", N::NAME);
            assert!(self.0.contains(&row), "{row} is listed");
            self.1 += 1;
        }
    }
    let mut listed = Listed(&page, 0);
    visit_methods(&mut listed);
    // Markers exist for the hooked requests, every host call and its notification form, and
    // the notifications with a params type: all were visited.
    let calls = host_call_rows();
    let markers = METHODS.iter().filter(|m| m.hook.is_some()).count()
        + calls.len()
        + calls.iter().filter(|c| c.notification.is_some()).count()
        + notification_rows().iter().filter(|n| n.params.is_some()).count();
    assert_eq!(listed.1, markers, "every marker was visited");
    for call in ["secrets.resolve", "span.record"] {
        assert!(page.contains(&format!("| `{call}` |")), "{call} is listed");
    }
    for note in [
        "execute.log",
        "loginPty.output",
        "loginPty.exit",
        "duplexChannel.data",
        "duplexChannel.exit",
    ] {
        assert!(page.contains(&format!("| `{note}` | worker→host |")), "{note} is listed");
    }
    // The hooks expansion and the rows agree on the notification hooks.
    let from_rows: Vec<(&str, &str)> =
        notification_rows().iter().filter_map(|r| r.hook.map(|h| (h, r.wire))).collect();
    assert_eq!(notification_hooks(), from_rows);
    for row in
        host_call_rows().iter().map(|r| r.docs).chain(notification_rows().iter().map(|r| r.docs))
    {
        assert!(!doc_text(row).is_empty(), "every call and notification has a description");
    }
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
