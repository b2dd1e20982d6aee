//! Completing a hook's signature: a hook under `#[provider]` names only what it uses (its
//! params, and optionally its `Context` and its backend `&B`) and returns any
//! `Result<T, E>` whose error converts (`IntoProviderError`); the trait's signature
//! `(&self, params, cx: Context) -> HookResult<T>` is generated around it.

use paperclip_sandbox_protocol::methods::Method;
use proc_macro2::TokenStream as TokenStream2;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, ImplItem, ImplItemFn, Pat, ReturnType, Type};

/// The arguments of a hook as written, after the receiver.
struct Written<'a> {
    params: (&'a Pat, &'a Type),
    cx: Option<(&'a Pat, &'a Type)>,
    backend: Option<(&'a Pat, &'a Type)>,
}

/// True when `ty` names the SDK's `Context` (`Context`, `sdk::Context`).
fn is_context(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none()
        && p.path.segments.last().is_some_and(|s| s.ident == "Context" && s.arguments.is_none()))
}

fn classify(f: &ImplItemFn) -> syn::Result<Written<'_>> {
    let mut inputs = f.sig.inputs.iter();
    if !matches!(inputs.next(), Some(FnArg::Receiver(_))) {
        return Err(syn::Error::new(f.sig.ident.span(), "a hook takes `&self` first"));
    }
    let mut params = None;
    let mut cx = None;
    let mut backend = None;
    for arg in inputs {
        let FnArg::Typed(t) = arg else { unreachable!("only the first argument is a receiver") };
        if let Type::Reference(r) = &*t.ty {
            if is_context(&r.elem) {
                return Err(syn::Error::new_spanned(
                    &t.ty,
                    "a hook takes its `Context` by value: write `cx: Context` (a `Context` is a \
                     cheap handle), not a reference",
                ));
            }
        }
        let (slot, what) = if is_context(&t.ty) {
            (&mut cx, "a `Context`")
        } else if matches!(*t.ty, Type::Reference(_)) {
            (&mut backend, "a backend (`&Backend`)")
        } else {
            (&mut params, "params")
        };
        if slot.is_some() {
            return Err(syn::Error::new(
                t.span(),
                format!(
                    "this hook already takes {what}: a hook takes its params, and optionally \
                     its `Context` and its backend (`&Backend`), each once"
                ),
            ));
        }
        *slot = Some((&*t.pat, &*t.ty));
    }
    let Some(params) = params else {
        return Err(syn::Error::new(
            f.sig.ident.span(),
            "a hook takes its params (by value, for example `params: ExecuteParams<Config>`, \
             or `_: HealthParams` when unused)",
        ));
    };
    Ok(Written { params, cx, backend })
}

/// Rewrites hook `f` serving `method` (`None`: the notification hook) into the trait's
/// signature.
pub(crate) fn complete(
    krate: &TokenStream2,
    f: &mut ImplItemFn,
    method: Option<Method>,
) -> syn::Result<()> {
    let written = classify(f)?;
    if f.sig.asyncness.is_none() {
        return Err(syn::Error::new(f.sig.fn_token.span, "a hook is an `async fn`"));
    }
    let (ppat, pty) = written.params;
    // The generated arguments keep the names the author wrote where they are plain names, so
    // that `#[tracing::instrument(skip(params, cx))]` and the recorded fields read as written.
    let pname = plain_name(ppat).unwrap_or_else(|| format_ident!("__params"));
    let cname = written
        .cx
        .as_ref()
        .and_then(|(pat, _)| plain_name(pat))
        .filter(|c| *c != pname)
        .unwrap_or_else(|| format_ident!("__cx"));
    let bind_cx = written.cx.map(|(pat, ty)| quote!(let #pat: #ty = #cname;));
    let receiver = f.sig.inputs.first().cloned();
    let ident = &f.sig.ident;
    let block = &f.block;
    // The hook's attributes (docs, lint levels, `#[tracing::instrument]`…) stay on it.
    let attrs = &f.attrs;
    let Some(method) = method else {
        // The notification hook: no answer, so nothing to convert.
        if let Some((_, ty)) = written.backend {
            return Err(syn::Error::new(ty.span(), "`on_event` takes no backend"));
        }
        if let ReturnType::Type(_, ty) = &f.sig.output {
            return Err(syn::Error::new(ty.span(), "`on_event` returns nothing"));
        }
        *f = syn::parse_quote_spanned! {f.sig.ident.span()=>
            #(#attrs)*
            async fn #ident(#receiver, #pname: #pty, #cname: #krate::Context) {
                let #ppat: #pty = #pname;
                #bind_cx
                #block
            }
        };
        return Ok(());
    };
    let ReturnType::Type(_, ret) = &f.sig.output else {
        return Err(syn::Error::new(
            f.sig.ident.span(),
            "a hook returns `Result<T, E>` (`HookResult<T>`, or any `E: IntoProviderError`)",
        ));
    };
    let variant = format_ident!("{method:?}");
    let method = quote!(#krate::__private::Method::#variant);
    let bind_backend = written.backend.map(|(pat, ty)| {
        quote_spanned! {ty.span()=>
            let __backend = #krate::__private::backend(self, &#cname, &#pname, #method).await?;
            let #pat: #ty = &*__backend;
        }
    });
    let ret_span = ret.span();
    let convert = quote_spanned! {ret_span=>
        #krate::__private::HookReturn::into_hook_result(__outcome, #method)
    };
    *f = syn::parse_quote_spanned! {f.sig.ident.span()=>
        #(#attrs)*
        async fn #ident(
            #receiver,
            #pname: #pty,
            #cname: #krate::Context,
        ) -> #krate::__private::HookOutput<#ret> {
            #bind_backend
            let #ppat: #pty = #pname;
            #bind_cx
            let __outcome: #ret = async move #block.await;
            #convert
        }
    };
    Ok(())
}

/// The name a pattern binds when it is a plain name (`params`, `mut params`), else `None`.
fn plain_name(pat: &Pat) -> Option<proc_macro2::Ident> {
    match pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Some(p.ident.clone()),
        _ => None,
    }
}

/// Takes `type Backend = …;` and `async fn connect` out of the block: they are the provider's
/// `Connect` impl. `Ok(None)` when the block writes neither.
pub(crate) fn take_connect(
    krate: &TokenStream2,
    block: &mut syn::ItemImpl,
) -> syn::Result<Option<TokenStream2>> {
    let backend = block
        .items
        .iter()
        .position(|item| matches!(item, ImplItem::Type(t) if t.ident == "Backend"));
    let connect = block
        .items
        .iter()
        .position(|item| matches!(item, ImplItem::Fn(f) if f.sig.ident == "connect"));
    let (backend, connect) =
        match (backend, connect) {
            (None, None) => return Ok(None),
            // The lone item is taken out, so that no second error follows from it.
            (Some(b), None) => return Err(syn::Error::new(
                block.items.remove(b).span(),
                "`type Backend` is written without `async fn connect(&self, config: &Config) -> \
                 Result<Backend, E>`: write both or neither",
            )),
            (None, Some(c)) => {
                let ImplItem::Fn(f) = block.items.remove(c) else { unreachable!() };
                return Err(syn::Error::new(
                    f.sig.ident.span(),
                    "`connect` is written without `type Backend = …;`: write both or neither",
                ));
            }
            (Some(b), Some(c)) => (b, c),
        };
    let (first, second) = if backend > connect { (backend, connect) } else { (connect, backend) };
    let a = block.items.remove(first);
    let b = block.items.remove(second);
    let (backend, connect) = if backend > connect { (a, b) } else { (b, a) };
    let ImplItem::Fn(connect) = connect else { unreachable!() };
    let ReturnType::Type(_, ret) = &connect.sig.output else {
        return Err(syn::Error::new(
            connect.sig.ident.span(),
            "`connect` returns `Result<Backend, E>` for an `E: IntoProviderError`",
        ));
    };
    let (impl_generics, _, where_clause) = block.generics.split_for_impl();
    let self_ty = &block.self_ty;
    Ok(Some(quote! {
        #[#krate::async_trait]
        impl #impl_generics #krate::Connect for #self_ty #where_clause {
            #backend
            type Error = <#ret as #krate::__private::HookReturn>::Err;
            #connect
        }
    }))
}
