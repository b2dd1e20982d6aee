//! The generated code: the `PluginManifest` impl, the compile-time capability checks, and the
//! dummy impl emitted after errors.

use paperclip_sandbox_protocol::capabilities::CAPABILITIES;
use paperclip_sandbox_protocol::manifest::Category;
use paperclip_sandbox_protocol::HostProfile;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::DeriveInput;

use super::check::{describe_group, requirement_text, Checked};
use super::parse::Input;
use super::DEFAULT_WORKER;

/// The impl and the checks of a declaration that passed every check.
pub(crate) fn expand(input: &Input, checked: &Checked, krate: &TokenStream) -> TokenStream {
    let ident = &input.ident;
    let (p, d) = (&input.plugin, &input.driver);
    let profile = profile_variant(checked.profile);
    let version = match &p.version {
        Some(v) => quote!(#v),
        None => quote!(::core::env!("CARGO_PKG_VERSION")),
    };
    let (id, display_name, description, author) =
        (&p.id, &p.display_name, &p.description, &p.author);
    let worker = p.worker.as_ref().map_or_else(|| quote!(#DEFAULT_WORKER), |w| quote!(#w));
    let categories = checked.categories.iter().map(|c| {
        let variant = format_ident!("{}", category_variant(*c));
        quote!(#krate::__private::Category::#variant)
    });
    let (key, driver_name) = (&d.key, &d.display_name);
    let driver_description = option(d.description.as_ref().map(|s| quote!(#s)));
    let capabilities = checked.capabilities.iter().map(
        |(index, _, value)| quote!((#krate::__private::CAPABILITIES[#index].capability, #value)),
    );
    let timeout = option(checked.default_acquire_timeout_ms.map(|v| quote!(#v)));
    let creation = option(checked.creation_operation_version.map(|v| quote!(#v)));
    let tasks = option(checked.supports_tasks.map(|v| quote!(#v)));
    let config_schema = match &d.config {
        Some(ty) => quote_spanned!(ty.span()=> #krate::config_schema::<#ty>),
        None => quote!(#krate::__private::empty_config_schema),
    };
    let config_type = match &d.config {
        Some(ty) => quote!(#ty),
        None => quote!(#krate::protocol::methods::JsonObject),
    };
    let checks = capability_checks(input, checked, krate);
    quote! {
        #[automatically_derived]
        impl #krate::DriverConfig for #ident {
            type Config = #config_type;
        }

        #[automatically_derived]
        impl #krate::PluginManifest for #ident {
            const PROFILE: #krate::protocol::HostProfile = #krate::protocol::HostProfile::#profile;

            fn manifest(
                profile: #krate::protocol::HostProfile,
            ) -> #krate::protocol::manifest::Manifest {
                const SPEC: #krate::ManifestSpec = #krate::ManifestSpec {
                    id: #id,
                    version: #version,
                    display_name: #display_name,
                    description: #description,
                    author: #author,
                    categories: &[ #(#categories),* ],
                    worker: #worker,
                    driver_key: #key,
                    driver_display_name: #driver_name,
                    driver_description: #driver_description,
                    capabilities: &[ #(#capabilities),* ],
                    default_acquire_timeout_ms: #timeout,
                    creation_operation_version: #creation,
                    supports_tasks: #tasks,
                    config_schema: #config_schema,
                };
                SPEC.to_manifest(profile)
            }
        }

        #checks
    }
}

/// `const` items that fail to evaluate when a capability declared `true` has a requirement
/// group none of whose methods the `#[provider]` block implements. Each is spanned at the
/// capability's key, so the error points there.
fn capability_checks(input: &Input, checked: &Checked, krate: &TokenStream) -> TokenStream {
    let ident = &input.ident;
    let mut checks = Vec::new();
    for (index, key, value) in &checked.capabilities {
        if !value {
            continue;
        }
        let spec = &CAPABILITIES[*index];
        for (group_index, group) in spec.required.iter().enumerate() {
            let message = format!(
                "capability `{}` is declared, but the #[provider] impl of `{ident}` does not \
                 define {}: {} needs {}",
                spec.key,
                describe_group(group),
                spec.key,
                requirement_text(spec.capability),
            );
            checks.push(quote_spanned! {key.span()=>
                const _: () = if !#krate::__private::satisfies(
                    METHODS,
                    #krate::__private::CAPABILITIES[#index].required[#group_index],
                ) {
                    ::core::panic!(#message)
                };
            });
        }
    }
    if let (Some(true), Some(lit)) = (checked.supports_tasks, &input.driver.supports_tasks) {
        let message = format!(
            "`supports_tasks` is declared, but the #[provider] impl of `{ident}` does not define \
             `environment_task` (environmentTask): the host runs Runner tasks through it"
        );
        checks.push(quote_spanned! {lit.span()=>
            const _: () = if !#krate::__private::satisfies(METHODS, &["environmentTask"]) {
                ::core::panic!(#message)
            };
        });
    }
    let methods = quote_spanned! {ident.span()=>
        #[allow(dead_code)]
        const METHODS: &[&str] = <#ident as #krate::ImplementedHooks>::METHODS;
    };
    quote! {
        const _: () = {
            #methods
            #(#checks)*
        };
    }
}

/// A `PluginManifest` impl that compiles whatever the attributes said, emitted next to the
/// errors so that code using the impl reports nothing more.
pub(crate) fn dummy(input: &DeriveInput, krate: &TokenStream) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        impl #impl_generics #krate::DriverConfig for #ident #ty_generics #where_clause {
            type Config = #krate::protocol::methods::JsonObject;
        }

        impl #impl_generics #krate::PluginManifest for #ident #ty_generics #where_clause {
            const PROFILE: #krate::protocol::HostProfile =
                #krate::protocol::HostProfile::Paperclip2026_11;

            fn manifest(
                _: #krate::protocol::HostProfile,
            ) -> #krate::protocol::manifest::Manifest {
                ::core::unreachable!("#[derive(PluginManifest)] reported errors")
            }
        }
    }
}

fn option(value: Option<TokenStream>) -> TokenStream {
    match value {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    }
}

fn profile_variant(profile: HostProfile) -> proc_macro2::Ident {
    match profile {
        HostProfile::Paperclip2026_09 => format_ident!("Paperclip2026_09"),
        _ => format_ident!("Paperclip2026_11"),
    }
}

fn category_variant(category: Category) -> &'static str {
    match category {
        Category::Connector => "Connector",
        Category::Workspace => "Workspace",
        Category::Automation => "Automation",
        Category::Ui => "Ui",
    }
}
