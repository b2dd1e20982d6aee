//! `#[provider]`: the hooks of an `impl SandboxProvider` block, advertised exactly.

use paperclip_sandbox_protocol::methods::name;
use proc_macro2::TokenStream as TokenStream2;
use quote::{format_ident, quote};
use syn::parse::Parser;
use syn::{ImplItem, ItemImpl};

/// One hook of `SandboxProvider`.
pub(crate) struct Hook {
    /// The Rust method name.
    pub rust: &'static str,
    /// The protocol crate's method-name constant and its value (the wire name); `None` for a
    /// hook that serves a notification and so is not advertised.
    pub wire: Option<(&'static str, &'static str)>,
}

const fn hook(rust: &'static str, constant: &'static str, wire: &'static str) -> Hook {
    Hook { rust, wire: Some((constant, wire)) }
}

/// Every hook of `SandboxProvider`. Checked against the SDK's table and the protocol registry
/// by the SDK's tests.
pub(crate) const HOOKS: &[Hook] = &[
    hook("initialize", "INITIALIZE", name::INITIALIZE),
    hook("config_changed", "CONFIG_CHANGED", name::CONFIG_CHANGED),
    hook("health", "HEALTH", name::HEALTH),
    hook("shutdown", "SHUTDOWN", name::SHUTDOWN),
    Hook { rust: "on_event", wire: None },
    hook("validate_config", "ENVIRONMENT_VALIDATE_CONFIG", name::ENVIRONMENT_VALIDATE_CONFIG),
    hook("probe", "ENVIRONMENT_PROBE", name::ENVIRONMENT_PROBE),
    hook("acquire_lease", "ENVIRONMENT_ACQUIRE_LEASE", name::ENVIRONMENT_ACQUIRE_LEASE),
    hook("resume_lease", "ENVIRONMENT_RESUME_LEASE", name::ENVIRONMENT_RESUME_LEASE),
    hook("release_lease", "ENVIRONMENT_RELEASE_LEASE", name::ENVIRONMENT_RELEASE_LEASE),
    hook("destroy_lease", "ENVIRONMENT_DESTROY_LEASE", name::ENVIRONMENT_DESTROY_LEASE),
    hook("stop_lease", "ENVIRONMENT_STOP_LEASE", name::ENVIRONMENT_STOP_LEASE),
    hook("realize_workspace", "ENVIRONMENT_REALIZE_WORKSPACE", name::ENVIRONMENT_REALIZE_WORKSPACE),
    hook("execute", "ENVIRONMENT_EXECUTE", name::ENVIRONMENT_EXECUTE),
    hook("sync_in", "ENVIRONMENT_SYNC_IN", name::ENVIRONMENT_SYNC_IN),
    hook("sync_out", "ENVIRONMENT_SYNC_OUT", name::ENVIRONMENT_SYNC_OUT),
    hook(
        "runner_ingress_endpoint",
        "ENVIRONMENT_RUNNER_INGRESS_ENDPOINT",
        name::ENVIRONMENT_RUNNER_INGRESS_ENDPOINT,
    ),
    hook(
        "start_interactive_setup",
        "ENVIRONMENT_START_INTERACTIVE_SETUP",
        name::ENVIRONMENT_START_INTERACTIVE_SETUP,
    ),
    hook(
        "get_interactive_setup",
        "ENVIRONMENT_GET_INTERACTIVE_SETUP",
        name::ENVIRONMENT_GET_INTERACTIVE_SETUP,
    ),
    hook(
        "cancel_interactive_setup",
        "ENVIRONMENT_CANCEL_INTERACTIVE_SETUP",
        name::ENVIRONMENT_CANCEL_INTERACTIVE_SETUP,
    ),
    hook("capture_template", "ENVIRONMENT_CAPTURE_TEMPLATE", name::ENVIRONMENT_CAPTURE_TEMPLATE),
    hook("delete_template", "ENVIRONMENT_DELETE_TEMPLATE", name::ENVIRONMENT_DELETE_TEMPLATE),
];

/// The hook serving wire method `wire`.
pub(crate) fn hook_for_wire(wire: &str) -> Option<&'static Hook> {
    HOOKS.iter().find(|h| h.wire.is_some_and(|(_, w)| w == wire))
}

/// The attribute's entry point (see the crate docs).
pub(crate) fn provider(attr: TokenStream2, item: TokenStream2) -> TokenStream2 {
    let krate = match parse_crate_path(attr) {
        Ok(p) => p,
        Err(e) => return e.to_compile_error(),
    };
    let mut block: ItemImpl = match syn::parse2(item) {
        Ok(b) => b,
        Err(e) => return e.to_compile_error(),
    };
    if block.trait_.is_none() {
        let error = syn::Error::new_spanned(
            &block.self_ty,
            "#[provider] goes on `impl SandboxProvider for YourType { … }`",
        )
        .to_compile_error();
        return quote!(#error #block);
    }
    let (tokens, errors) = expand(&krate, &mut block);
    let errors = errors.map(|e| e.to_compile_error());
    quote!(#errors #tokens)
}

fn parse_crate_path(attr: TokenStream2) -> syn::Result<TokenStream2> {
    if attr.is_empty() {
        return Ok(quote!(::paperclip_sandbox_sdk));
    }
    let mut krate = None;
    syn::meta::parser(|meta| {
        if meta.path.is_ident("crate") {
            krate = Some(crate::crate_path_value(&meta)?);
            Ok(())
        } else {
            Err(meta.error("expected `crate = path` or `crate = \"path\"`"))
        }
    })
    .parse2(attr)?;
    Ok(krate.map_or_else(|| quote!(::paperclip_sandbox_sdk), |p| quote!(#p)))
}

/// The expanded trait impl and `ImplementedHooks` impl, and the errors found. After errors the
/// expansion is still emitted, without the offending methods, so that no second error
/// cascades from a missing `implemented_methods` or `#[async_trait]`.
fn expand(krate: &TokenStream2, block: &mut ItemImpl) -> (TokenStream2, Option<syn::Error>) {
    let mut errors: Option<syn::Error> = None;
    let mut push = |e: syn::Error| match errors.as_mut() {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    let mut wire = Vec::new();
    let mut sync_hooks = Vec::new();
    let mut rejected = Vec::new();
    for item in &block.items {
        let ImplItem::Fn(f) = item else { continue };
        let ident = &f.sig.ident;
        let name = ident.to_string();
        if name == "implemented_methods" {
            push(syn::Error::new(
                ident.span(),
                "`implemented_methods` is generated by #[provider] from the hooks written here; \
                 remove it",
            ));
            rejected.push(ident.clone());
            continue;
        }
        if name == "sync_in" || name == "sync_out" {
            sync_hooks.push(ident.clone());
        }
        match HOOKS.iter().find(|hook| hook.rust == name) {
            Some(Hook { wire: Some((constant, _)), .. }) => {
                wire.push(format_ident!("{}", constant))
            }
            Some(Hook { wire: None, .. }) => {}
            None => {
                rejected.push(ident.clone());
                let hooks: Vec<&str> = HOOKS.iter().map(|h| h.rust).collect();
                push(syn::Error::new(
                    ident.span(),
                    format!(
                        "`{name}` is not a hook of SandboxProvider; the hooks are: {}",
                        hooks.join(", ")
                    ),
                ));
            }
        }
    }
    if let [only] = sync_hooks.as_slice() {
        let (written, missing) = if only == "sync_in" {
            ("sync_in` (environmentSyncIn", "sync_out` (environmentSyncOut")
        } else {
            ("sync_out` (environmentSyncOut", "sync_in` (environmentSyncIn")
        };
        push(syn::Error::new(
            only.span(),
            format!(
                "`{written}) is written without `{missing}): the host uses native sync only as \
                 a pair (capabilities nativeSyncIn and nativeSyncOut); write both hooks or neither"
            ),
        ));
    }
    block.items.retain(|item| !matches!(item, ImplItem::Fn(f) if rejected.contains(&f.sig.ident)));
    block.items.push(syn::parse_quote! {
        fn implemented_methods(&self) -> &'static [&'static str] {
            <Self as #krate::ImplementedHooks>::METHODS
        }
    });
    let (impl_generics, _, where_clause) = block.generics.split_for_impl();
    let self_ty = &block.self_ty;
    let hooks_impl = quote! {
        impl #impl_generics #krate::ImplementedHooks for #self_ty #where_clause {
            const METHODS: &'static [&'static str] =
                &[ #( #krate::protocol::methods::name::#wire ),* ];
        }
    };
    let has_async_trait = block
        .attrs
        .iter()
        .any(|a| a.path().segments.last().is_some_and(|s| s.ident == "async_trait"));
    let async_trait = if has_async_trait { quote!() } else { quote!(#[#krate::async_trait]) };
    let tokens = quote! {
        #async_trait
        #block
        #hooks_impl
    };
    (tokens, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(tokens: TokenStream2) -> syn::Result<String> {
        let mut block: ItemImpl = syn::parse2(tokens).unwrap();
        match expand(&quote!(::paperclip_sandbox_sdk), &mut block) {
            (tokens, None) => Ok(tokens.to_string()),
            (_, Some(e)) => Err(e),
        }
    }

    #[test]
    fn generates_exactly_the_written_hooks_through_protocol_constants() {
        let out = run(quote! {
            impl SandboxProvider for P {
                async fn execute(&self, p: ExecuteParams, cx: Context) -> HookResult<ExecuteResult> { todo() }
                async fn on_event(&self, p: Value, cx: Context) {}
                async fn health(&self, cx: Context) -> HookResult<HealthResult> { todo() }
            }
        })
        .unwrap();
        let compact: String = out.split_whitespace().collect();
        assert!(
            compact.contains(
                "&[::paperclip_sandbox_sdk::protocol::methods::name::ENVIRONMENT_EXECUTE,\
             ::paperclip_sandbox_sdk::protocol::methods::name::HEALTH]"
            ),
            "{out}"
        );
        assert!(compact.starts_with("#[::paperclip_sandbox_sdk::async_trait]"), "{out}");
        assert!(
            compact.contains("impl::paperclip_sandbox_sdk::ImplementedHooksforP{constMETHODS"),
            "{out}"
        );
    }

    #[test]
    fn after_errors_the_block_is_still_expanded_without_the_offending_methods() {
        let mut block: ItemImpl = syn::parse2(quote! {
            impl SandboxProvider for P {
                async fn exec(&self) {}
                async fn probe(&self) {}
            }
        })
        .unwrap();
        let (tokens, errors) = expand(&quote!(::paperclip_sandbox_sdk), &mut block);
        assert!(errors.is_some());
        let out = tokens.to_string();
        assert!(!out.contains("fn exec") && out.contains("fn probe"), "{out}");
        assert!(out.contains("fn implemented_methods") && out.contains("async_trait"), "{out}");
    }

    #[test]
    fn rejects_one_sync_hook_without_the_other() {
        let err = run(quote! {
            impl SandboxProvider for P {
                async fn sync_out(&self, p: SyncOutParams, cx: Context) -> HookResult<SyncResult> { todo() }
            }
        })
        .unwrap_err();
        assert!(err.to_string().starts_with("`sync_out` (environmentSyncOut) is written without"));
        let both = quote! {
            impl SandboxProvider for P {
                async fn sync_in(&self) {}
                async fn sync_out(&self) {}
            }
        };
        assert!(run(both).is_ok());
    }

    #[test]
    fn hook_table_uses_the_protocol_names() {
        assert_eq!(hook_for_wire("environmentSyncIn").map(|h| h.rust), Some("sync_in"));
        assert!(hook_for_wire("duplexChannelOpen").is_none());
    }

    #[test]
    fn rejects_every_non_hook_at_once() {
        let err = run(quote! {
            impl SandboxProvider for P {
                async fn exec(&self) {}
                fn implemented_methods(&self) -> &'static [&'static str] { &[] }
                async fn probe(&self) {}
                async fn frobnicate(&self) {}
            }
        })
        .unwrap_err();
        let messages: Vec<String> = err.into_iter().map(|e| e.to_string()).collect();
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert!(messages[0].starts_with("`exec` is not a hook of SandboxProvider"));
        assert!(messages[1].contains("generated by #[provider]"));
        assert!(messages[2].starts_with("`frobnicate` is not a hook"));
    }

    #[test]
    fn keeps_an_existing_async_trait_and_rejects_inherent_impls() {
        let out = run(quote! {
            #[async_trait]
            impl SandboxProvider for P {}
        })
        .unwrap();
        assert_eq!(out.matches("async_trait").count(), 1, "{out}");
        let inherent = provider(quote!(), quote!(impl P {})).to_string();
        assert!(inherent.contains("compile_error"), "{inherent}");
    }
}
