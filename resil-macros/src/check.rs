//! The fallback dispatch and the compile-time checks it carries. Every call
//! that a misfitting fallback would fail is spanned at the user's
//! `fallback = path` token, and the trait it fails on carries a message that
//! says what to write (see `__private::fallback` in the facade). Nothing here
//! moves an argument before the chosen fallback is called.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Path, Type};

/// What the dispatch needs to know about the protected fn.
pub(crate) struct Protected<'a> {
    /// The stack's result variable.
    pub(crate) out: &'a Ident,
    /// The fallbacks as written (their spans carry every check).
    pub(crate) fallbacks: &'a [Path],
    /// How each is called (`Self::f` for a method's `f`).
    pub(crate) paths: &'a [TokenStream],
    /// The arguments passed on, and their types (`_` for `impl Trait`).
    pub(crate) args: &'a [TokenStream],
    pub(crate) arg_types: &'a [TokenStream],
    pub(crate) ret: &'a Type,
    pub(crate) is_async: bool,
    pub(crate) fn_name: &'a Ident,
    /// `::resil::checks`, or under the `crate = "…"` override.
    pub(crate) checks: &'a TokenStream,
}

/// `match out { Ok(v) => Ok(v), Err(err) => most specific fallback or leftover }`.
pub(crate) fn dispatch(fn_: &Protected<'_>) -> TokenStream {
    let Protected {
        out,
        fallbacks,
        paths,
        args,
        arg_types,
        ret,
        is_async,
        fn_name,
        checks,
    } = *fn_;
    let p = checks.clone();
    let err = Ident::new("__resil_err", Span::mixed_site());
    let cov = Ident::new("__resil_cov", Span::mixed_site());
    let site = Ident::new("__RESIL_FALLBACK", Span::mixed_site());
    let args_ty = quote!((#(#arg_types,)*));
    let e = quote!(<#ret as #p::ProtectedResult>::Err);
    let args_val = quote!((#(#args,)*));

    let mut binds = TokenStream::new();
    let mut vars = Vec::new();
    for (i, (f, path)) in fallbacks.iter().zip(paths).enumerate() {
        let span = f.span();
        let var = format_ident!(
            "__resil_fallback{}",
            i,
            span = span.resolved_at(Span::mixed_site())
        );
        binds.extend(quote_spanned!(span=> let #var = &#path;));
        vars.push((var, span));
    }

    let mut checks = TokenStream::new();
    for (j, (b, span)) in vars.iter().enumerate() {
        for (a, _) in &vars[..j] {
            checks.extend(
                quote_spanned!(*span=> #p::distinct::<_, _, _, _, #args_ty, #e>(#a, #b, &#err);),
            );
        }
    }
    let mut coverage = TokenStream::new();
    for (i, (var, span)) in vars.iter().enumerate() {
        let one = quote_spanned!(*span=> #p::coverage::<_, #args_ty, #e, _>(#var, &#err));
        coverage.extend(if i == 0 {
            quote!(let #cov = #one;)
        } else {
            quote!(let #cov = #p::join(#cov, #one);)
        });
    }
    let ranks = vars
        .iter()
        .map(|(var, span)| quote_spanned!(*span=> #p::rank::<_, #args_ty, #e, _>(#var, &#err)));
    let arms = vars.iter().enumerate().map(|(i, (var, span))| {
        let call = if is_async {
            // Every token of the call at the user's `fallback = path`: the
            // failed bound is then reported once, there, not also at the
            // attribute for the path to `invoke_async` and its `.await`.
            let p = respan(p.clone(), *span);
            quote_spanned!(*span=> #p::invoke_async::<#ret, _, #args_ty, #e, _>(#var, #args_val, #err).await)
        } else {
            quote_spanned!(*span=> #p::invoke::<#ret, _, #args_ty, #e, _>(#var, #args_val, #err))
        };
        let finished = quote_spanned!(*span=> #site.finished(#call));
        quote! {
            ::core::option::Option::Some(#i) => {
                #site.degraded(&#err);
                #finished
            }
        }
    });
    let ret_span = ret.span();
    let leftover = quote_spanned!(ret_span=> #p::leftover(#cov, #err));
    let key = quote!(::core::concat!(
        ::core::module_path!(),
        "::",
        ::core::stringify!(#fn_name)
    ));
    quote! {
        match #out {
            ::core::result::Result::Ok(value) => ::core::result::Result::Ok(value),
            ::core::result::Result::Err(#err) => {
                static #site: #p::FallbackSite = #p::FallbackSite::new(#key);
                #binds
                #checks
                #coverage
                match #p::pick(&[#(#ranks),*]) {
                    #(#arms)*
                    _ => ::core::result::Result::Err(#leftover),
                }
            }
        }
    }
}

/// `tokens` with every token (and group) at `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut t| {
            if let proc_macro2::TokenTree::Group(g) = &t {
                let mut group = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                t = proc_macro2::TokenTree::Group(group);
            } else {
                t.set_span(span);
            }
            t
        })
        .collect()
}
