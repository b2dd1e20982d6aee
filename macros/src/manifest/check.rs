//! Checking the parsed attributes with the protocol crate's own rules.
//!
//! Capability keys are looked up in the capability table; the removed keys get their own
//! error; the November-only driver fields are refused when the provider targets
//! paperclip-2026-09. Every literal is then put into a manifest and run through
//! `manifest::validate` for the target profile, and each issue is reported at the attribute
//! token its path names.

use paperclip_sandbox_protocol::capabilities::{Capability, CAPABILITIES, REMOVED_KEYS};
use paperclip_sandbox_protocol::manifest::{
    validate, Category, DriverDeclaration, Manifest, PLUGIN_CATEGORIES,
};
use paperclip_sandbox_protocol::HostProfile;
use serde_json::Value;
use syn::{Attribute, Ident, LitInt, LitStr};

use super::parse::Input;
use super::suggest::did_you_mean;
use super::Errors;
use paperclip_sandbox_protocol::methods::lookup;

/// What the checks establish, for the expansion.
pub(crate) struct Checked {
    /// The target profile.
    pub profile: HostProfile,
    /// The categories (default `automation`).
    pub categories: Vec<Category>,
    /// The declared capabilities: table index, key token and value.
    pub capabilities: Vec<(usize, Ident, bool)>,
    /// `defaultAcquireTimeoutMs`, when declared and allowed by the profile.
    pub default_acquire_timeout_ms: Option<u64>,
    /// `creationOperationVersion`, when declared and allowed by the profile.
    pub creation_operation_version: Option<u32>,
    /// `supportsTasks`, when declared and allowed by the profile.
    pub supports_tasks: Option<bool>,
}

/// Runs every check; problems go to `errors`.
pub(crate) fn check(input: &Input, errors: &mut Errors) -> Checked {
    if input.has_generics {
        errors.push(syn::Error::new(
            input.ident.span(),
            "#[derive(PluginManifest)] does not support generic types: its compile-time \
             capability checks are `const` items, which cannot name a generic parameter",
        ));
    }
    let (p, d) = (&input.plugin, &input.driver);
    if let Some(attr) = &input.plugin.attr {
        require(errors, attr, &[(&p.id, "id"), (&p.display_name, "display_name")]);
        require(errors, attr, &[(&p.description, "description"), (&p.author, "author")]);
    }
    if let Some(attr) = &input.driver.attr {
        require(errors, attr, &[(&d.key, "key"), (&d.display_name, "display_name")]);
    }

    let profile = match &input.plugin.profile {
        None => HostProfile::default(),
        Some(lit) => lit.value().parse().unwrap_or_else(|e| {
            errors.push(syn::Error::new(lit.span(), e));
            HostProfile::default()
        }),
    };
    let categories = categories(input, errors);
    let capabilities = capabilities(input, errors);
    let default_acquire_timeout_ms =
        november_field::<u64>(input.driver.default_acquire_timeout_ms.as_ref(), profile, errors);
    let creation_operation_version =
        november_field::<u32>(input.driver.creation_operation_version.as_ref(), profile, errors);
    let supports_tasks = input
        .driver
        .supports_tasks
        .as_ref()
        .and_then(|lit| november_only(lit.span(), profile, errors).then_some(lit.value));
    let checked = Checked {
        profile,
        categories,
        capabilities,
        default_acquire_timeout_ms,
        creation_operation_version,
        supports_tasks,
    };
    run_validator(input, &checked, errors);
    checked
}

/// Reports each missing required argument at the attribute (a missing attribute is reported
/// once, by the parser).
fn require(errors: &mut Errors, attr: &Attribute, args: &[(&Option<LitStr>, &str)]) {
    for (slot, name) in args {
        if slot.is_none() {
            let attr_name = attr.path().get_ident().map(Ident::to_string).unwrap_or_default();
            errors.push(syn::Error::new_spanned(
                attr,
                format!("#[{attr_name}(…)] needs `{name} = \"…\"`"),
            ));
        }
    }
}

fn categories(input: &Input, errors: &mut Errors) -> Vec<Category> {
    let Some(list) = &input.plugin.categories else { return vec![Category::Automation] };
    let mut out = Vec::new();
    for lit in list {
        match serde_json::from_value::<Category>(Value::String(lit.value())) {
            Ok(c) if !out.contains(&c) => out.push(c),
            Ok(_) => errors.push(syn::Error::new(lit.span(), "duplicate category")),
            Err(_) => errors.push(syn::Error::new(
                lit.span(),
                format!(
                    "unknown category `{}` (expected one of: {}; sandbox providers use \
                     \"automation\")",
                    lit.value(),
                    PLUGIN_CATEGORIES.join(", ")
                ),
            )),
        }
    }
    out
}

fn capabilities(input: &Input, errors: &mut Errors) -> Vec<(usize, Ident, bool)> {
    let mut out: Vec<(usize, Ident, bool)> = Vec::new();
    for decl in &input.driver.capabilities {
        let key = decl.key.to_string();
        if REMOVED_KEYS.contains(&key.as_str()) {
            errors.push(syn::Error::new(
                decl.key.span(),
                format!(
                    "`{key}` was removed from the capability contract (paperclip-2026-11); \
                     hosts of that contract reject it and the SDK never emits it: remove it"
                ),
            ));
            continue;
        }
        let Some(index) = CAPABILITIES.iter().position(|s| s.key == key) else {
            let known = CAPABILITIES.iter().map(|s| s.key).filter(|k| !REMOVED_KEYS.contains(k));
            let hint = match did_you_mean(&key, known.clone()) {
                Some(s) => format!("; did you mean `{s}`?"),
                None => String::new(),
            };
            errors.push(syn::Error::new(
                decl.key.span(),
                format!(
                    "unknown sandbox capability `{key}`{hint} (known: {})",
                    known.collect::<Vec<_>>().join(", ")
                ),
            ));
            continue;
        };
        if out.iter().any(|(i, _, _)| *i == index) {
            errors.push(syn::Error::new(decl.key.span(), format!("`{key}` is declared twice")));
            continue;
        }
        if decl.value {
            never_grantable(index, &decl.key, errors);
        }
        out.push((index, decl.key.clone(), decl.value));
    }
    out
}

/// Reports a capability one of whose required methods no hook of `SandboxProvider` serves:
/// the host can never verify it.
fn never_grantable(index: usize, key: &Ident, errors: &mut Errors) {
    let spec = &CAPABILITIES[index];
    for group in spec.required {
        if !group.iter().any(|m| lookup(m).is_some_and(|info| info.hook.is_some())) {
            errors.push(syn::Error::new(
                key.span(),
                format!(
                    "`{}` can never be granted: it needs the worker method {}, which \
                     SandboxProvider has no hook for; remove it or declare it `= false`",
                    spec.key,
                    group.join(" or ")
                ),
            ));
        }
    }
}

/// Reads a 2026-11-only driver field, refusing it when the target is paperclip-2026-09.
fn november_field<T>(lit: Option<&LitInt>, profile: HostProfile, errors: &mut Errors) -> Option<T>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    let lit = lit?;
    if !november_only(lit.span(), profile, errors) {
        return None;
    }
    match lit.base10_parse::<T>() {
        Ok(v) => Some(v),
        Err(e) => {
            errors.push(syn::Error::new(lit.span(), format!("invalid value: {e}")));
            None
        }
    }
}

/// True when the profile accepts a 2026-11-only driver field; otherwise reports it at `span`.
fn november_only(span: proc_macro2::Span, profile: HostProfile, errors: &mut Errors) -> bool {
    if profile.is_november() {
        return true;
    }
    errors.push(syn::Error::new(
        span,
        format!(
            "this is a paperclip-2026-11 driver field, but the provider targets {profile} \
             (`profile = \"{profile}\"`), whose hosts reject it as an unrecognized key; \
             remove it or target paperclip-2026-11 (the manifest for paperclip-2026-09 \
             hosts then leaves it out)"
        ),
    ));
    false
}

/// Builds a manifest from the literals (valid placeholders where an argument is missing, which
/// is reported already) and reports the validator's issues at their tokens.
fn run_validator(input: &Input, checked: &Checked, errors: &mut Errors) {
    let (p, d) = (&input.plugin, &input.driver);
    let text = |lit: &Option<LitStr>, placeholder: &str| {
        lit.as_ref().map_or_else(|| placeholder.to_owned(), LitStr::value)
    };
    let mut driver =
        DriverDeclaration::sandbox_provider(text(&d.key, "driver"), text(&d.display_name, "x"));
    if let Some(description) = &d.description {
        driver = driver.with_description(description.value());
    }
    for (index, _, value) in &checked.capabilities {
        driver = driver.with_capability(CAPABILITIES[*index].capability, *value);
    }
    driver.default_acquire_timeout_ms = checked.default_acquire_timeout_ms;
    driver.creation_operation_version = checked.creation_operation_version;
    driver.supports_tasks = checked.supports_tasks;
    let mut manifest = Manifest::sandbox_provider(
        text(&p.id, "plugin"),
        text(&p.version, "0.0.0"),
        text(&p.display_name, "x"),
        text(&p.worker, super::DEFAULT_WORKER),
    )
    .with_description(text(&p.description, "x"))
    .with_author(text(&p.author, "x"))
    .with_driver(driver);
    if !checked.categories.is_empty() {
        manifest.categories = checked.categories.clone();
    }
    let report = validate(&manifest.to_value(), checked.profile);
    for issue in report.errors {
        let (arg, span) = match issue.path.as_str() {
            "id" => ("id", p.id.as_ref().map(LitStr::span)),
            "version" => ("version", p.version.as_ref().map(LitStr::span)),
            "displayName" => ("display_name", p.display_name.as_ref().map(LitStr::span)),
            "description" => ("description", p.description.as_ref().map(LitStr::span)),
            "author" => ("author", p.author.as_ref().map(LitStr::span)),
            "entrypoints.worker" => ("worker", p.worker.as_ref().map(LitStr::span)),
            "environmentDrivers.0.driverKey" => ("key", d.key.as_ref().map(LitStr::span)),
            "environmentDrivers.0.displayName" => {
                ("display_name", d.display_name.as_ref().map(LitStr::span))
            }
            "environmentDrivers.0.description" => {
                ("description", d.description.as_ref().map(LitStr::span))
            }
            "environmentDrivers.0.defaultAcquireTimeoutMs" => (
                "default_acquire_timeout_ms",
                d.default_acquire_timeout_ms.as_ref().map(LitInt::span),
            ),
            "environmentDrivers.0.creationOperationVersion" => (
                "creation_operation_version",
                d.creation_operation_version.as_ref().map(LitInt::span),
            ),
            _ => ("", None),
        };
        // A placeholder never fails; an issue elsewhere is reported at the type name.
        let span = span.unwrap_or_else(|| input.ident.span());
        let message = if arg.is_empty() {
            format!("the generated manifest is invalid at `{}`: {}", issue.path, issue.message)
        } else {
            format!("invalid `{arg}`: {}", issue.message)
        };
        errors.push(syn::Error::new(span, message));
    }
}

/// The hook names of the capability's missing-method messages: "`resume_lease`
/// (environmentResumeLease)".
pub(crate) fn describe_group(group: &[&str]) -> String {
    let names: Vec<String> = group
        .iter()
        .map(|wire| match lookup(wire).and_then(|info| info.hook) {
            Some(hook) => format!("`{hook}` ({wire})"),
            None => format!("({wire})"),
        })
        .collect();
    names.join(" or ")
}

/// "a, b and c".
pub(crate) fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Everything `capability` needs, for messages: "environmentResumeLease,
/// environmentReleaseLease and environmentDestroyLease".
pub(crate) fn requirement_text(capability: Capability) -> String {
    let groups: Vec<String> = capability.spec().required.iter().map(|g| g.join(" or ")).collect();
    and_list(&groups)
}
