//! Parsing `#[plugin(…)]` and `#[driver(…)]` into [`Input`], collecting every problem.
//!
//! Syntax errors inside one attribute stop that attribute (its remaining arguments cannot be
//! read), but wrong value kinds, unknown and duplicate arguments are collected and parsing goes
//! on, so one compile run shows them all.

use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, DeriveInput, Expr, ExprLit, Ident, Lit, LitBool, LitInt, LitStr, Path, Type};

use super::suggest::did_you_mean;
use super::Errors;

/// The arguments of `#[plugin(…)]`.
pub(crate) const PLUGIN_ARGS: &[&str] = &[
    "id",
    "display_name",
    "description",
    "author",
    "version",
    "categories",
    "worker",
    "profile",
    "crate",
];

/// The arguments of `#[driver(…)]`.
pub(crate) const DRIVER_ARGS: &[&str] = &[
    "key",
    "display_name",
    "description",
    "config",
    "capabilities",
    "default_acquire_timeout_ms",
    "creation_operation_version",
    "supports_tasks",
];

/// `#[plugin(…)]`.
#[derive(Default)]
pub(crate) struct PluginAttr {
    pub id: Option<LitStr>,
    pub display_name: Option<LitStr>,
    pub description: Option<LitStr>,
    pub author: Option<LitStr>,
    pub version: Option<LitStr>,
    pub categories: Option<Vec<LitStr>>,
    pub worker: Option<LitStr>,
    pub profile: Option<LitStr>,
    pub krate: Option<Path>,
}

/// One entry of `capabilities(…)`: `key` (true) or `key = bool`.
pub(crate) struct CapabilityDecl {
    pub key: Ident,
    pub value: bool,
}

/// `#[driver(…)]`.
#[derive(Default)]
pub(crate) struct DriverAttr {
    pub key: Option<LitStr>,
    pub display_name: Option<LitStr>,
    pub description: Option<LitStr>,
    pub config: Option<Type>,
    pub capabilities: Vec<CapabilityDecl>,
    pub default_acquire_timeout_ms: Option<LitInt>,
    pub creation_operation_version: Option<LitInt>,
    /// `supports_tasks` (alone: `true`) or `supports_tasks = bool`.
    pub supports_tasks: Option<LitBool>,
}

/// The derive input with its attributes read.
pub(crate) struct Input {
    pub ident: Ident,
    pub has_generics: bool,
    pub plugin: Attr<PluginAttr>,
    pub driver: Attr<DriverAttr>,
}

/// The arguments of one attribute (what it dereferences to), and the attribute when present.
#[derive(Default)]
pub(crate) struct Attr<T> {
    pub args: T,
    pub attr: Option<Attribute>,
}

impl<T> std::ops::Deref for Attr<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.args
    }
}

impl<T> Attr<T> {
    /// Reads `attr`'s arguments with `arg`; a second such attribute is the `duplicate` error.
    fn read(
        &mut self,
        attr: &Attribute,
        errors: &mut Errors,
        duplicate: &str,
        arg: fn(&mut T, &ParseNestedMeta<'_>, &mut Errors) -> syn::Result<()>,
    ) {
        if self.attr.is_some() {
            errors.push(syn::Error::new_spanned(attr, duplicate));
            return;
        }
        self.attr = Some(attr.clone());
        let mut inner = Errors::default();
        if let Err(e) = attr.parse_nested_meta(|meta| arg(&mut self.args, &meta, &mut inner)) {
            inner.push(e);
        }
        errors.extend(inner);
    }
}

/// Reads the attributes of `input`; problems go to `errors`.
pub(crate) fn parse(input: &DeriveInput, errors: &mut Errors) -> Input {
    let mut out = Input {
        ident: input.ident.clone(),
        has_generics: !input.generics.params.is_empty(),
        plugin: Attr::default(),
        driver: Attr::default(),
    };
    for attr in &input.attrs {
        if attr.path().is_ident("plugin") {
            out.plugin.read(attr, errors, "duplicate #[plugin(…)] attribute", plugin_arg);
        } else if attr.path().is_ident("driver") {
            let duplicate =
                "duplicate #[driver(…)] attribute: a provider serves exactly one driver";
            out.driver.read(attr, errors, duplicate, driver_arg);
        }
    }
    if out.plugin.attr.is_none() {
        errors.push(syn::Error::new(
            out.ident.span(),
            "#[derive(PluginManifest)] needs a #[plugin(id = \"…\", display_name = \"…\", \
             description = \"…\", author = \"…\")] attribute",
        ));
    }
    if out.driver.attr.is_none() {
        errors.push(syn::Error::new(
            out.ident.span(),
            "#[derive(PluginManifest)] needs a #[driver(key = \"…\", display_name = \"…\")] \
             attribute",
        ));
    }
    out
}

fn duplicate(meta: &ParseNestedMeta<'_>) -> syn::Error {
    let name = meta.path.get_ident().map(Ident::to_string).unwrap_or_default();
    meta.error(format!("duplicate `{name}`"))
}

/// Parses `= <expr>` and returns the expression.
fn value_expr(meta: &ParseNestedMeta<'_>) -> syn::Result<Expr> {
    meta.value()?.parse::<Expr>()
}

fn string(meta: &ParseNestedMeta<'_>, errors: &mut Errors) -> syn::Result<Option<LitStr>> {
    match value_expr(meta)? {
        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Ok(Some(s)),
        other => {
            errors.push(syn::Error::new_spanned(other, "expected a string literal"));
            Ok(None)
        }
    }
}

fn integer(meta: &ParseNestedMeta<'_>, errors: &mut Errors) -> syn::Result<Option<LitInt>> {
    match value_expr(meta)? {
        Expr::Lit(ExprLit { lit: Lit::Int(i), .. }) => Ok(Some(i)),
        other => {
            errors.push(syn::Error::new_spanned(other, "expected an integer literal"));
            Ok(None)
        }
    }
}

/// A flag: the argument alone (`true`) or `= bool`; `None` (with `wrong` in `errors`) for
/// another value.
fn flag(
    meta: &ParseNestedMeta<'_>,
    errors: &mut Errors,
    wrong: &str,
) -> syn::Result<Option<LitBool>> {
    if !meta.input.peek(syn::Token![=]) {
        return Ok(Some(LitBool::new(true, meta.path.span())));
    }
    match value_expr(meta)? {
        Expr::Lit(ExprLit { lit: Lit::Bool(b), .. }) => Ok(Some(b)),
        other => {
            errors.push(syn::Error::new_spanned(other, wrong));
            Ok(None)
        }
    }
}

macro_rules! store {
    ($slot:expr, $value:expr, $meta:expr, $errors:expr) => {{
        let value = $value;
        if $slot.is_some() {
            $errors.push(duplicate($meta));
        } else if value.is_some() {
            $slot = value;
        }
    }};
}

fn plugin_arg(
    p: &mut PluginAttr,
    meta: &ParseNestedMeta<'_>,
    errors: &mut Errors,
) -> syn::Result<()> {
    let name = arg_name(meta);
    match name.as_str() {
        "id" => store!(p.id, string(meta, errors)?, meta, errors),
        "display_name" => store!(p.display_name, string(meta, errors)?, meta, errors),
        "description" => store!(p.description, string(meta, errors)?, meta, errors),
        "author" => store!(p.author, string(meta, errors)?, meta, errors),
        "version" => store!(p.version, string(meta, errors)?, meta, errors),
        "worker" => store!(p.worker, string(meta, errors)?, meta, errors),
        "profile" => store!(p.profile, string(meta, errors)?, meta, errors),
        "crate" => store!(p.krate, Some(crate::crate_path_value(meta)?), meta, errors),
        "categories" => {
            let list = match value_expr(meta)? {
                Expr::Array(array) => {
                    let mut list = Vec::new();
                    for elem in array.elems {
                        match elem {
                            Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => list.push(s),
                            other => errors.push(syn::Error::new_spanned(
                                other,
                                "expected a category string such as \"automation\"",
                            )),
                        }
                    }
                    Some(list)
                }
                other => {
                    errors.push(syn::Error::new_spanned(
                        other,
                        "expected an array of strings, e.g. categories = [\"automation\"]",
                    ));
                    None
                }
            };
            store!(p.categories, list, meta, errors)
        }
        _ => {
            skip_value(meta)?;
            errors.push(unknown_arg(meta, &name, "#[plugin]", PLUGIN_ARGS));
        }
    }
    Ok(())
}

fn driver_arg(
    d: &mut DriverAttr,
    meta: &ParseNestedMeta<'_>,
    errors: &mut Errors,
) -> syn::Result<()> {
    let name = arg_name(meta);
    match name.as_str() {
        "key" => store!(d.key, string(meta, errors)?, meta, errors),
        "display_name" => store!(d.display_name, string(meta, errors)?, meta, errors),
        "description" => store!(d.description, string(meta, errors)?, meta, errors),
        "config" => store!(d.config, Some(meta.value()?.parse::<Type>()?), meta, errors),
        "default_acquire_timeout_ms" => {
            store!(d.default_acquire_timeout_ms, integer(meta, errors)?, meta, errors)
        }
        "creation_operation_version" => {
            store!(d.creation_operation_version, integer(meta, errors)?, meta, errors)
        }
        "supports_tasks" => {
            let alone = "expected `true` or `false` (`supports_tasks` alone means `true`)";
            store!(d.supports_tasks, flag(meta, errors, alone)?, meta, errors)
        }
        "capabilities" => {
            meta.parse_nested_meta(|cap| {
                let Some(key) = cap.path.get_ident().cloned() else {
                    return Err(cap.error("expected a capability key such as `reusableLeases`"));
                };
                let alone = "expected `true` or `false` (a key alone means `true`)";
                let value = flag(&cap, errors, alone)?.is_none_or(|b| b.value);
                d.capabilities.push(CapabilityDecl { key, value });
                Ok(())
            })?;
        }
        _ => {
            skip_value(meta)?;
            errors.push(unknown_arg(meta, &name, "#[driver]", DRIVER_ARGS));
        }
    }
    Ok(())
}

fn arg_name(meta: &ParseNestedMeta<'_>) -> String {
    match meta.path.get_ident() {
        Some(ident) => ident.to_string(),
        None => quote::ToTokens::to_token_stream(&meta.path).to_string().replace(' ', ""),
    }
}

/// Consumes `= value` or `(…)` after an unknown argument so that parsing can go on.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        value_expr(meta)?;
    } else if meta.input.peek(syn::token::Paren) {
        let _content;
        syn::parenthesized!(_content in meta.input);
    }
    Ok(())
}

fn unknown_arg(meta: &ParseNestedMeta<'_>, name: &str, attr: &str, known: &[&str]) -> syn::Error {
    let hint = match did_you_mean(name, known.iter().copied()) {
        Some(s) => format!("; did you mean `{s}`?"),
        None => String::new(),
    };
    syn::Error::new_spanned(
        &meta.path,
        format!("unknown {attr} argument `{name}`{hint} (expected one of: {})", known.join(", ")),
    )
}
