//! What to emit when the input is invalid (thiserror's `fallback.rs`): the
//! user's fn as written, minus the resil attributes, plus the errors. Callers
//! then see no cascade of "cannot find function" errors, and IDEs keep
//! completing.

use proc_macro2::TokenStream;
use quote::quote;
use syn::parse::Parser;
use syn::Attribute;

use crate::model::resil_aspect;

pub(crate) fn with_error(input: TokenStream, error: syn::Error) -> TokenStream {
    let errors = error.to_compile_error();
    // Strip sibling resil attributes so they do not expand on their own and
    // report the same problems again.
    let stripped = strip_siblings(input.clone()).unwrap_or(input);
    quote! {
        #errors
        #stripped
    }
}

fn strip_siblings(input: TokenStream) -> Option<TokenStream> {
    let parser = |stream: syn::parse::ParseStream<'_>| {
        let attrs = stream.call(Attribute::parse_outer)?;
        let rest: TokenStream = stream.parse()?;
        Ok((attrs, rest))
    };
    let (attrs, rest) = parser.parse2(input).ok()?;
    let kept = attrs.into_iter().filter(|a| resil_aspect(a).is_none());
    Some(quote!(#(#kept)* #rest))
}
