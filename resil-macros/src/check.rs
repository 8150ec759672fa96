//! The fallback dispatch and the compile-time checks it carries. Every call
//! that a misfitting fallback would fail is spanned at the user's
//! `fallback = path` token, and the trait it fails on carries a message that
//! says what to write (see `__private::fallback` in the facade). Nothing here
//! moves an argument before the chosen fallback is called.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

use crate::respan::{mixed, respan, respan_all};
use crate::valid::OnClass;
use syn::spanned::Spanned;
use syn::{Ident, Path, Type};

/// What the dispatch needs to know about the protected fn.
pub(crate) struct Protected<'a> {
    /// The stack's result variable.
    pub(crate) out: &'a Ident,
    /// The fallbacks as written (their spans carry every check).
    pub(crate) fallbacks: &'a [Path],
    /// `on = [...]`: the classes they handle (empty: every error).
    pub(crate) on: &'a [OnClass],
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

/// The last segment of a fallback's path, as a type name for a message.
fn name_of(path: &Path) -> Ident {
    path.segments
        .last()
        .expect("a path has a segment")
        .ident
        .clone()
}

/// `match out { Ok(v) => Ok(v), Err(err) => most specific fallback or leftover }`.
pub(crate) fn dispatch(fn_: &Protected<'_>) -> TokenStream {
    let Protected {
        out,
        fallbacks,
        on,
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
    let cov = mixed("__resil_cov");
    let site = mixed("__RESIL_FALLBACK");
    let args_ty = quote!((#(#arg_types,)*));
    // The protected fn's parameters as messages show them: an `impl Trait`
    // parameter (`_` in `arg_types`) as `resil::checks::ImplTrait`.
    let shown = arg_types.iter().map(|t| {
        if t.to_string() == "_" {
            quote!(#p::ImplTrait)
        } else {
            t.clone()
        }
    });
    let shown_ty = quote!((#(#shown,)*));
    let e = quote!(<#ret as #p::ProtectedResult>::Err);
    let args_val = quote!((#(#args,)*));

    // Each fallback is first checked part by part (see `checks::fit`): its
    // parameters in order, its trailing error parameter, its return type.
    // The first part that does not fit is the one error, at the user's
    // token; what comes after sees an unknown type and reports nothing.
    let mut binds = TokenStream::new();
    let mut vars = Vec::new();
    for (i, (f, path)) in fallbacks.iter().zip(paths).enumerate() {
        let span = f.span();
        let var = format_ident!("__resil_fallback{}", i, span = span);
        let mut chain = quote!(#p::signature::<_, _, _>(&#path));
        for (n, ty) in arg_types.iter().enumerate() {
            let index = proc_macro2::Literal::usize_unsuffixed(n + 1);
            chain = quote!(#p::Param::<#index, #ty, _, #shown_ty>::param(#chain));
        }
        chain =
            quote!(#p::ErrorParam::<#e, _, _>::error_param(#p::Tail::<#shown_ty, _>::tail(#chain)));
        // An async fn's fallback's return type is checked where it is
        // awaited (`AsyncOutput::into_future`): a check here too could not keep that
        // call from reporting it again.
        chain = if is_async {
            quote!(#p::fitted(#chain))
        } else {
            quote!(#p::Returns::<#ret, _>::returns(#chain))
        };
        binds.extend(respan_all(quote!(let #var = #chain;), span));
        vars.push((var, span));
    }

    let mut checks = TokenStream::new();
    for (j, (b, span)) in vars.iter().enumerate() {
        for (i, (a, _)) in vars[..j].iter().enumerate() {
            // Types named after the two fallbacks, for the message.
            let na = name_of(&fallbacks[i]);
            let nb = name_of(&fallbacks[j]);
            // The same fn listed twice is named twice.
            let second = (nb != na).then(|| {
                quote! {
                    #[allow(non_camel_case_types, dead_code)]
                    enum #nb {}
                }
            });
            checks.extend(respan(
                quote!({
                    #[allow(non_camel_case_types, dead_code)]
                    enum #na {}
                    #second
                    #p::distinct::<_, _, _, _, #args_ty, #e, #na, #nb>(
                        #a, #b, &#err, ::core::marker::PhantomData,
                    );
                }),
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
            // The arguments keep their own hygiene (a renamed pattern).
            // Two trait methods called by their traits' paths, not a fn
            // with bounds: rustc then names no item of resil's source.
            let invoke = respan_all(quote!(#p::Fallback::<#args_ty, #e, _>::invoke), *span);
            let args_val = respan(args_val.clone(), *span);
            let mut inner = respan_all(quote!(#var,), *span);
            inner.extend(args_val);
            inner.extend(respan_all(quote!(, #err), *span));
            let mut group = proc_macro2::Group::new(proc_macro2::Delimiter::Parenthesis, inner);
            group.set_span(*span);
            let mut output = proc_macro2::Group::new(
                proc_macro2::Delimiter::Parenthesis,
                quote!(#invoke #group),
            );
            output.set_span(*span);
            let into_future = respan_all(quote!(#p::AsyncOutput::<#ret>::into_future), *span);
            let wait = respan_all(quote!(.await), *span);
            quote!(#into_future #output #wait)
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
    // `on = [...]`: the classes of the fn's error type must be its derive's
    // (each checked at the name as written: rustc then says which class the
    // type lacks, and suggests a close one); an error of no listed class
    // goes by every fallback, and a refusal may then be left over.
    let mut on_checks = TokenStream::new();
    let mut picked = quote!(#p::pick(&[#(#ranks),*]));
    let mut cov_left = quote!(#cov);
    if !on.is_empty() {
        let names: Vec<String> = on.iter().map(|c| c.ident.to_string()).collect();
        let own: Vec<&OnClass> = on.iter().filter(|c| !c.refusal).collect();
        let handles = if own.is_empty() {
            quote!(#p::on_refusals(&#err, &[#(#names),*]))
        } else {
            let names_of = respan_all(quote!(#p::ErrorClassNames), own[0].ident.span());
            for class in &own {
                let ident = &class.ident;
                let names_of = respan(names_of.clone(), ident.span());
                on_checks.extend(quote_spanned!(ident.span()=>
                    let _ = <<#e as #names_of>::Names>::#ident;
                ));
            }
            let first = own[0].ident.span();
            let call = respan_all(quote!(<#e as #p::ErrorClassNames>::on_classes), first);
            quote!(#call(&#err, &[#(#names),*]))
        };
        picked = quote!(if #handles { #picked } else { ::core::option::Option::None });
        if !names.iter().any(|n| n == "rejected") {
            cov_left = quote!(#p::some_refusal_left(#cov));
        }
    }
    let leftover = respan(quote!(#p::leftover::<_, #e>(#cov_left, #err)), err_span);
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
                #on_checks
                match #picked {
                    #(#arms)*
                    _ => ::core::result::Result::Err(#leftover),
                }
            }
        }
    }
}
