//! The merged model: the fn plus every resil attribute on it. The first resil
//! attribute to expand reads its siblings from the fn's attribute list and
//! strips them, so one expansion sees (and builds) the whole stack.

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::spanned::Spanned;
use syn::{Attribute, Meta};

use crate::attr::AspectArgs;
use crate::diag::Errors;
use crate::item::ItemFn;
use resil_options::Aspect;

/// The marker item every expansion puts in the rewritten body, so a resil
/// attribute that could not be recognised as a sibling (a renamed import) and
/// expands later can tell the fn is protected already.
pub(crate) const PROTECTED_MARKER: &str = "__RESIL_PROTECTED";

pub(crate) struct Model {
    pub(crate) item: ItemFn,
    /// Every resil attribute, the expanding one first, then its siblings as written.
    pub(crate) aspects: Vec<AspectArgs>,
    /// Set when the body already carries an expansion's marker.
    pub(crate) already_protected: bool,
}

/// Which resil attribute `attr` is, by path shape: `retry`, `resil::retry` or
/// `::resil::retry` (as tokio's `is_test_attribute`). A renamed import
/// (`use resil::retry as r;`) cannot be seen; see `PROTECTED_MARKER`.
pub(crate) fn resil_aspect(attr: &Attribute) -> Option<Aspect> {
    let path = attr.path();
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let last = match segments.as_slice() {
        [last] if path.leading_colon.is_none() => last,
        [krate, last] if krate == "resil" => last,
        _ => return None,
    };
    Aspect::from_name(last)
}

fn mentions_marker(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|t| match t {
        TokenTree::Ident(i) => i == PROTECTED_MARKER,
        TokenTree::Group(g) => mentions_marker(g.stream()),
        _ => false,
    })
}

impl Model {
    /// Builds the model for attribute `aspect` (whose arguments are `args`)
    /// expanding on `item`.
    pub(crate) fn from_syn(
        aspect: Aspect,
        args: TokenStream,
        mut item: ItemFn,
        errors: &mut Errors,
    ) -> Model {
        let mut aspects = vec![AspectArgs::parse(aspect, Span::call_site(), args, errors)];
        let mut kept = Vec::with_capacity(item.attrs.len());
        for attr in std::mem::take(&mut item.attrs) {
            let Some(sibling) = resil_aspect(&attr) else {
                kept.push(attr);
                continue;
            };
            let tokens = match &attr.meta {
                Meta::Path(_) => TokenStream::new(),
                Meta::List(list) => list.tokens.clone(),
                Meta::NameValue(nv) => {
                    errors.push(syn::Error::new(
                        nv.eq_token.span(),
                        format!("write `#[resil::{sibling}(name = \"…\")]`"),
                    ));
                    TokenStream::new()
                }
            };
            aspects.push(AspectArgs::parse(
                sibling,
                attr.path().span(),
                tokens,
                errors,
            ));
        }
        item.attrs = kept;
        let already_protected = mentions_marker(item.body.clone());
        Model {
            item,
            aspects,
            already_protected,
        }
    }
}
