//! The fn being protected: attributes, visibility and signature parsed, the
//! body kept as tokens (never parsed into statements, so spans stay intact and
//! a body in mid-edit still expands).

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::parse::{Parse, ParseStream};
use syn::{
    AngleBracketedGenericArguments, Attribute, GenericArgument, PathArguments, ReturnType,
    Signature, Token, Type, TypeParamBound, Visibility,
};

/// A fn item, an impl method or a provided trait method.
pub(crate) struct ItemFn {
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) sig: Signature,
    pub(crate) inner_attrs: Vec<Attribute>,
    pub(crate) brace_span: Span,
    /// The block's statements, as written.
    pub(crate) body: TokenStream,
    /// Set when the fn is `#[async_trait]`'s output (see [`AsyncTrait`]).
    pub(crate) async_trait: Option<AsyncTrait>,
}

/// What `#[async_trait]` leaves for a method-level attribute that expands after
/// it: a non-`async` fn returning `Pin<Box<dyn Future<Output = R> + Send + 'a>>`
/// whose body ends in `Box::pin(async move { … })`. Both shapes async-trait
/// has emitted (with and without statements before the `Box::pin`, which older
/// versions used to rebind arguments) are handled: the statements before are
/// kept, the `async move` block is the body that gets protected, and `R` is the
/// output.
pub(crate) struct AsyncTrait {
    /// `R`, what the boxed future resolves to.
    pub(crate) output: Type,
    /// Statements before the `Box::pin(…)`.
    pub(crate) prefix: TokenStream,
    /// The `Box::pin` path tokens, re-emitted as written.
    pub(crate) boxing: TokenStream,
    /// The `async move` block, whose contents are the protected body.
    pub(crate) block: Group,
}

impl Parse for ItemFn {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        // `default fn` in specialising impls is not supported by stable Rust.
        let sig: Signature = input.parse()?;
        if input.peek(Token![;]) {
            return Err(syn::Error::new(
                input.span(),
                "a resil attribute protects a fn body, and this fn has none; put the attribute on the impl's fn instead",
            ));
        }
        let content;
        let brace = syn::braced!(content in input);
        let inner_attrs = content.call(Attribute::parse_inner)?;
        let body: TokenStream = content.parse()?;
        let mut item = ItemFn {
            attrs,
            vis,
            sig,
            inner_attrs,
            brace_span: brace.span.join(),
            body,
            async_trait: None,
        };
        item.async_trait = AsyncTrait::detect(&item);
        Ok(item)
    }
}

impl ItemFn {
    /// Whether the protected body is async (an `async fn`, or async-trait's shape).
    pub(crate) fn is_async(&self) -> bool {
        self.sig.asyncness.is_some() || self.async_trait.is_some()
    }

    /// The type the body evaluates to: the declared return type, or the boxed
    /// future's output for async-trait. `None` for `-> ()` (no return type).
    pub(crate) fn output(&self) -> Option<&Type> {
        match (&self.async_trait, &self.sig.output) {
            (Some(at), _) => Some(&at.output),
            (None, ReturnType::Type(_, ty)) => Some(ty),
            (None, ReturnType::Default) => None,
        }
    }

    /// The body that gets protected: the whole block, or async-trait's
    /// `async move` block contents.
    pub(crate) fn body_block(&self) -> TokenStream {
        if let Some(at) = &self.async_trait {
            return at.block.to_token_stream();
        }
        let mut group = Group::new(Delimiter::Brace, self.body.clone());
        // Where the user's braces are, but marked as the expansion's: the
        // block is an argument in the expansion, and rustc's `unused_braces`
        // must not take a one-expression body (`{ Ok(id) }`) for braces the
        // user could remove.
        group.set_span(self.brace_span.resolved_at(Span::mixed_site()));
        group.into_token_stream()
    }
}

fn last_segment_args<'a>(ty: &'a Type, name: &str) -> Option<&'a AngleBracketedGenericArguments> {
    let Type::Path(p) = ty else { return None };
    let seg = p.path.segments.last()?;
    if seg.ident != name {
        return None;
    }
    match &seg.arguments {
        PathArguments::AngleBracketed(args) => Some(args),
        _ => None,
    }
}

fn single_type_arg(args: &AngleBracketedGenericArguments) -> Option<&Type> {
    match args.args.first()? {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    }
}

impl AsyncTrait {
    fn detect(item: &ItemFn) -> Option<AsyncTrait> {
        if item.sig.asyncness.is_some() {
            return None;
        }
        let ReturnType::Type(_, ty) = &item.sig.output else {
            return None;
        };
        // Pin<Box<dyn Future<Output = R> + Send + 'async_trait>>
        let boxed = single_type_arg(last_segment_args(ty, "Pin")?)?;
        let dyn_future = single_type_arg(last_segment_args(boxed, "Box")?)?;
        let Type::TraitObject(obj) = dyn_future else {
            return None;
        };
        let output = obj.bounds.iter().find_map(|b| match b {
            TypeParamBound::Trait(t) => {
                let seg = t.path.segments.last()?;
                if seg.ident != "Future" {
                    return None;
                }
                let PathArguments::AngleBracketed(args) = &seg.arguments else {
                    return None;
                };
                args.args.iter().find_map(|a| match a {
                    GenericArgument::AssocType(assoc) if assoc.ident == "Output" => {
                        Some(assoc.ty.clone())
                    }
                    _ => None,
                })
            }
            _ => None,
        })?;
        // The body ends in `Box::pin(async move { … })`, optionally with `;`-ended
        // statements before it.
        let tokens: Vec<TokenTree> = item.body.clone().into_iter().collect();
        let n = tokens.len();
        if n < 4 {
            return None;
        }
        let TokenTree::Group(call) = &tokens[n - 1] else {
            return None;
        };
        if call.delimiter() != Delimiter::Parenthesis {
            return None;
        }
        let is = |t: &TokenTree, s: &str| t.to_string() == s;
        if !(is(&tokens[n - 2], "pin") && is(&tokens[n - 3], ":") && is(&tokens[n - 4], ":")) {
            return None;
        }
        let boxing_start = if n >= 5 && is(&tokens[n - 5], "Box") {
            n - 5
        } else {
            return None;
        };
        // A path prefix such as `::std::boxed::Box::pin` is kept as written.
        let mut start = boxing_start;
        while start >= 2 && is(&tokens[start - 1], ":") && is(&tokens[start - 2], ":") {
            start -= 2;
            if start >= 1 && matches!(tokens[start - 1], TokenTree::Ident(_)) {
                start -= 1;
            }
        }
        let inner: Vec<TokenTree> = call.stream().into_iter().collect();
        let [TokenTree::Ident(kw_async), TokenTree::Ident(kw_move), TokenTree::Group(block)] =
            inner.as_slice()
        else {
            return None;
        };
        if kw_async != "async" || kw_move != "move" || block.delimiter() != Delimiter::Brace {
            return None;
        }
        Some(AsyncTrait {
            output,
            prefix: tokens[..start].iter().cloned().collect(),
            boxing: tokens[start..n - 1].iter().cloned().collect(),
            block: block.clone(),
        })
    }
}
