//! `#[derive(PluginManifest)]`: parse → check → expand (see the crate docs).

mod check;
mod expand;
mod parse;
mod suggest;

use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

/// The default `entrypoints.worker`: the shim the packaging command writes.
pub(crate) const DEFAULT_WORKER: &str = "./dist/worker.cjs";

/// Every error found, combined into one.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    /// Adds an error.
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    /// Adds every error of `other`.
    pub(crate) fn extend(&mut self, other: Errors) {
        if let Some(e) = other.0 {
            self.push(e);
        }
    }
}

/// The derive's entry point.
pub(crate) fn derive(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let mut errors = Errors::default();
    let parsed = parse::parse(&input, &mut errors);
    let krate = match &parsed.plugin.krate {
        Some(path) => quote!(#path),
        None => quote!(::paperclip_sandbox_sdk),
    };
    let checked = check::check(&parsed, &mut errors);
    match errors.0 {
        None => expand::expand(&parsed, &checked, &krate),
        Some(e) => {
            let errors = e.to_compile_error();
            let dummy = expand::dummy(&input, &krate);
            quote!(#errors #dummy)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(tokens: TokenStream) -> Vec<String> {
        let input: DeriveInput = syn::parse2(tokens).unwrap();
        let mut errors = Errors::default();
        let parsed = parse::parse(&input, &mut errors);
        check::check(&parsed, &mut errors);
        errors.0.map(|e| e.into_iter().map(|e| e.to_string()).collect()).unwrap_or_default()
    }

    #[test]
    fn a_complete_declaration_has_no_errors() {
        let found = errors(quote! {
            #[plugin(id = "acme.sbx", display_name = "Acme", description = "d", author = "a")]
            #[driver(key = "acme", display_name = "Acme", capabilities(reusableLeases, nativeSyncIn = false),
                     default_acquire_timeout_ms = 86_400_000, creation_operation_version = 1,
                     supports_tasks)]
            struct P;
        });
        assert_eq!(found, Vec::<String>::new());
    }

    #[test]
    fn supports_tasks_is_a_november_boolean() {
        let ok = errors(quote! {
            #[plugin(id = "a", display_name = "A", description = "d", author = "a")]
            #[driver(key = "a", display_name = "A", supports_tasks = false)]
            struct P;
        });
        assert_eq!(ok, Vec::<String>::new());
        let found = errors(quote! {
            #[plugin(id = "a", display_name = "A", description = "d", author = "a")]
            #[driver(key = "a", display_name = "A", supports_tasks = 1, supports_task)]
            struct P;
        });
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found[0].contains("expected `true` or `false`"), "{found:?}");
        assert!(found[1].contains("did you mean `supports_tasks`?"), "{found:?}");
        let old = errors(quote! {
            #[plugin(id = "a", display_name = "A", description = "d", author = "a", profile = "paperclip-2026-09")]
            #[driver(key = "a", display_name = "A", supports_tasks)]
            struct P;
        });
        assert_eq!(old.len(), 1, "{old:?}");
        assert!(old[0].starts_with("this is a paperclip-2026-11 driver field"), "{old:?}");
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let found = errors(quote! {
            #[plugin(id = "Acme", display_name = "", author = "a", colour = "red", categories = ["robots"])]
            #[driver(key = "acme!", display_name = "Acme",
                     capabilities(reusableLease, concurrentSyncAndExec),
                     default_acquire_timeout_ms = 0, creation_operation_version = 2)]
            struct P<T>(T);
        });
        let expected = [
            "unknown #[plugin] argument `colour`",
            "does not support generic types",
            "#[plugin(…)] needs `description = \"…\"`",
            "unknown category `robots`",
            "unknown sandbox capability `reusableLease`; did you mean `reusableLeases`?",
            "`concurrentSyncAndExec` was removed from the capability contract",
            "invalid `id`: Plugin id must start with a lowercase alphanumeric",
            "invalid `display_name`: Too small",
            "invalid `key`: Environment driver key must start",
            "invalid `default_acquire_timeout_ms`: defaultAcquireTimeoutMs must be an integer",
            "invalid `creation_operation_version`: unsupported creation operation version 2",
        ];
        assert_eq!(found.len(), expected.len(), "{found:#?}");
        for (message, prefix) in found.iter().zip(expected) {
            assert!(message.contains(prefix), "{message:?} should contain {prefix:?}");
        }
    }

    #[test]
    fn september_targets_refuse_november_fields() {
        let found = errors(quote! {
            #[plugin(id = "a", display_name = "A", description = "d", author = "a", profile = "paperclip-2026-09")]
            #[driver(key = "a", display_name = "A", default_acquire_timeout_ms = 1000)]
            struct P;
        });
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("this is a paperclip-2026-11 driver field"), "{found:?}");
    }

    #[test]
    fn missing_attributes_are_named() {
        let found = errors(quote!(
            struct P;
        ));
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found[0].contains("needs a #[plugin("));
        assert!(found[1].contains("needs a #[driver("));
    }
}
