//! The fallback dispatch and the compile-time checks it carries. Every call
//! that a misfitting fallback would fail is spanned at the user's
//! `fallback = path` token, and the trait it fails on carries a message that
//! says what to write (see `__private::fallback` in the facade). Nothing here
//! moves an argument before the chosen fallback is called.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

use crate::expand::respan;
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
    /// Where an error type unable to carry a rejection is reported.
    pub(crate) err_span: Span,
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
        err_span,
    } = *fn_;
    let p = checks.clone();
    // Call-site hygiene (the names cannot meet the user's: the body is not in
    // scope here): a call made of tokens of one context only is reported at
    // the span it is given, the user's `fallback = path`, never widened to
    // the whole attribute.
    let err = Ident::new("__resil_err", Span::call_site());
    let cov = Ident::new("__resil_cov", Span::mixed_site());
    let site = Ident::new("__RESIL_FALLBACK", Span::mixed_site());
    let args_ty = quote!((#(#arg_types,)*));
    let e = quote!(<#ret as #p::ProtectedResult>::Err);
    let args_val = quote!((#(#args,)*));

    let mut binds = TokenStream::new();
    let mut vars = Vec::new();
    for (i, (f, path)) in fallbacks.iter().zip(paths).enumerate() {
        let span = f.span();
        let var = format_ident!("__resil_fallback{}", i, span = span);
        binds.extend(quote_spanned!(span=> let #var = &#path;));
        vars.push((var, span));
    }

    let mut checks = TokenStream::new();
    for (j, (b, span)) in vars.iter().enumerate() {
        for (a, _) in &vars[..j] {
            checks.extend(respan(
                quote!(#p::distinct::<_, _, _, _, #args_ty, #e>(#a, #b, &#err);),
                *span,
            ));
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
        // Every token of the call at the user's `fallback = path`: a failed
        // bound is then reported once, there, not also at the attribute.
        let call = if is_async {
            respan(
                quote!(#p::invoke_async::<#ret, _, #args_ty, #e, _>(#var, #args_val, #err).await),
                *span,
            )
        } else {
            // Here only the path is moved: the whole call at the token would
            // report an unfit fallback twice (`coverage`, then `invoke`).
            let p = respan(p.clone(), *span);
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
    let leftover = respan(quote!(#p::leftover::<_, #e>(#cov, #err)), err_span);
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
