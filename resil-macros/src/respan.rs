//! Respanning: generated tokens placed at the user's tokens, so an error in
//! them is reported where the user can fix it (STYLE rule 12b). Every
//! helper that moves tokens to a span lives here.

use proc_macro2::{Group, Ident, Span, TokenStream, TokenTree};

/// `tokens` with every token (and group) at `span`; identifiers keep their
/// own hygiene.
pub(crate) fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut t| {
            match &mut t {
                TokenTree::Group(g) => {
                    let mut group = Group::new(g.delimiter(), respan(g.stream(), span));
                    group.set_span(span);
                    t = TokenTree::Group(group);
                }
                TokenTree::Ident(i) => {
                    let s = span.resolved_at(i.span());
                    i.set_span(s);
                }
                other => other.set_span(span),
            }
            t
        })
        .collect()
}

/// `tokens` with every token, identifiers included, at exactly `span`: an
/// expression made of them is then reported at `span`, never widened to the
/// whole attribute (tokens of two contexts join to the macro's call site).
/// Only for tokens naming nothing local to the expansion.
pub(crate) fn respan_all(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut t| {
            if let TokenTree::Group(g) = &t {
                let mut group = Group::new(g.delimiter(), respan_all(g.stream(), span));
                group.set_span(span);
                t = TokenTree::Group(group);
            } else {
                t.set_span(span);
            }
            t
        })
        .collect()
}

/// An identifier of the expansion's own, which the user's code cannot name
/// or shadow (`Span::mixed_site()`, STYLE rule 12a).
pub(crate) fn mixed(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
}
