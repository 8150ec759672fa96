//! The pipeline, as thiserror's `try_expand`: parse → model → validate →
//! expand, and when anything is wrong, the user's fn unchanged plus every
//! error (see `fallback.rs`).

use proc_macro2::TokenStream;

use crate::diag::Errors;
use crate::expand::expand as codegen;
use crate::fallback;
use crate::item::ItemFn;
use crate::model::{resil_aspect, Model};
use crate::valid;
use resil_options::Aspect;

pub(crate) fn expand(aspect: Aspect, args: TokenStream, input: TokenStream) -> TokenStream {
    let item: ItemFn = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(e) => {
            if let Ok(closure) = syn::parse2::<syn::ExprClosure>(input.clone()) {
                // An expression: the error, then the closure as written.
                let error = syn::Error::new(
                    closure.or1_token.span,
                    format!("a resil attribute protects a fn, a method or a fn in a trait impl, not a closure; move the closure's body into a fn and put `#[resil::{aspect}(…)]` on that fn"),
                )
                .to_compile_error();
                return quote::quote!({ #error #closure });
            }
            if let Some(span) = let_statement(&input) {
                // A statement (rustc reports the attribute there as unstable
                // first): the error, then the statement as written.
                let error = syn::Error::new(
                    span,
                    format!("a resil attribute protects a fn, a method or a fn in a trait impl, not a `let` statement or the closure it binds; move the closure's body into a fn and put `#[resil::{aspect}(…)]` on that fn"),
                )
                .to_compile_error();
                return quote::quote!(#error #input);
            }
            return fallback::with_error(input.clone(), not_a_fn(aspect, &input).unwrap_or(e));
        }
    };
    let mut errors = Errors::new();
    let model = Model::from_syn(aspect, args, item, &mut errors);
    let plan = valid::check(model, &mut errors);
    match (errors.finish(), plan) {
        (Ok(()), Some(plan)) => codegen(plan),
        (Err(e), _) => fallback::with_error(input, e),
        (Ok(()), None) => unreachable!("`check` returns no plan only after reporting an error"),
    }
}

/// The order the expansion of `input`'s resil attributes nests them in,
/// outermost first, as `[::resil::options::Aspect::…]` (see
/// `__expansion_order`): the model and the rules of [`expand`], with the
/// first resil attribute standing for the one expanding.
pub(crate) fn expansion_order(input: TokenStream) -> TokenStream {
    let mut item: ItemFn = match syn::parse2(input) {
        Ok(item) => item,
        Err(e) => return e.to_compile_error(),
    };
    let Some(at) = item.attrs.iter().position(|a| resil_aspect(a).is_some()) else {
        return syn::Error::new(
            proc_macro2::Span::call_site(),
            "expected a fn with resil attributes",
        )
        .to_compile_error();
    };
    let attr = item.attrs.remove(at);
    let aspect = resil_aspect(&attr).expect("found by `resil_aspect`");
    let args = match attr.meta {
        syn::Meta::List(list) => list.tokens,
        _ => TokenStream::new(),
    };
    let mut errors = Errors::new();
    let model = Model::from_syn(aspect, args, item, &mut errors);
    let plan = valid::check(model, &mut errors);
    match (errors.finish(), plan) {
        (Ok(()), Some(plan)) => {
            let krate = &plan.krate;
            let aspects = plan.layers.iter().map(|l| {
                syn::Ident::new(&format!("{:?}", l.aspect), proc_macro2::Span::call_site())
            });
            quote::quote!([#(#krate::options::Aspect::#aspects),*])
        }
        (Err(e), _) => e.to_compile_error(),
        (Ok(()), None) => unreachable!("`check` returns no plan only after reporting an error"),
    }
}

/// Where to report an attribute on a `let` statement: at its closure when
/// it binds one, else at `let`.
fn let_statement(input: &TokenStream) -> Option<proc_macro2::Span> {
    use syn::parse::Parser;
    let stmts = syn::Block::parse_within.parse2(input.clone()).ok()?;
    let [syn::Stmt::Local(local)] = stmts.as_slice() else {
        return None;
    };
    match local.init.as_ref().map(|init| &*init.expr) {
        Some(syn::Expr::Closure(closure)) => Some(closure.or1_token.span),
        _ => Some(local.let_token.span),
    }
}

/// The error for an attribute on an item other than a fn, at its keyword:
/// what resil protects, and for an impl block, where the attribute goes.
fn not_a_fn(aspect: Aspect, input: &TokenStream) -> Option<syn::Error> {
    let item: syn::Item = syn::parse2(input.clone()).ok()?;
    let protects = "a resil attribute protects a fn, a method or a fn in a trait impl";
    let (span, what) = match &item {
        syn::Item::Fn(_) => return None,
        syn::Item::Impl(i) => {
            return Some(syn::Error::new(
                i.impl_token.span,
                format!("{protects}, not an impl block; put `#[resil::{aspect}(…)]` on each method to protect, each on its own"),
            ))
        }
        syn::Item::Struct(i) => (i.struct_token.span, "a struct"),
        syn::Item::Enum(i) => (i.enum_token.span, "an enum"),
        syn::Item::Union(i) => (i.union_token.span, "a union"),
        syn::Item::Trait(i) => (i.trait_token.span, "a trait; put it on the fns of the trait's impls"),
        syn::Item::Mod(i) => (i.mod_token.span, "a module"),
        syn::Item::Const(i) => (i.const_token.span, "a const"),
        syn::Item::Static(i) => (i.static_token.span, "a static"),
        syn::Item::Type(i) => (i.type_token.span, "a type alias"),
        syn::Item::Use(i) => (i.use_token.span, "a `use`"),
        _ => return None,
    };
    Some(syn::Error::new(
        span,
        format!(
            "{protects}, not {what}; put `#[resil::{aspect}(…)]` on the fn that makes the call"
        ),
    ))
}
