//! `#[derive(ErrorClass)]`: a stable name per enum variant, the variant's name
//! in snake_case unless `#[error_class(name = "…")]` says otherwise.

use proc_macro2::TokenStream;
use quote::quote;
use resil_options::case::snake_case;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, LitStr};

/// A variant's class name (with the span to blame), its aliases, and
/// whether it wraps a downstream's answer (`#[error_class(http)]`).
type VariantName = (
    String,
    proc_macro2::Span,
    Vec<String>,
    Option<proc_macro2::Span>,
);

fn variant_name(v: &syn::Variant) -> syn::Result<VariantName> {
    let mut name = None;
    let mut aliases: Vec<String> = Vec::new();
    let mut http = None;
    for attr in v.attrs.iter().filter(|a| a.path().is_ident("error_class")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("http") {
                if http.is_some() {
                    return Err(meta.error("duplicate `http`; give it once"));
                }
                match &v.fields {
                    Fields::Unnamed(f) if f.unnamed.len() == 1 => {}
                    _ => {
                        return Err(meta.error(
                            "`http` marks a variant with one field holding the downstream's answer, e.g. `Upstream(resil::http::HttpError)` (any field type implementing `resil::HttpStatus`)",
                        ))
                    }
                }
                http = Some(meta.path.span());
                Ok(())
            } else if meta.path.is_ident("name") {
                let lit: LitStr = meta.value()?.parse()?;
                if lit.value().trim().is_empty() {
                    return Err(syn::Error::new(
                        lit.span(),
                        "an error class name may not be empty",
                    ));
                }
                if name.is_some() {
                    return Err(meta.error("duplicate `name`; give it once"));
                }
                name = Some((lit.value(), lit.span()));
                Ok(())
            } else if meta.path.is_ident("aliases") {
                let list: syn::ExprArray = meta.value()?.parse()?;
                for item in list.elems {
                    match item {
                        syn::Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Str(lit),
                            ..
                        }) if !lit.value().trim().is_empty() => aliases.push(lit.value()),
                        other => {
                            return Err(syn::Error::new_spanned(
                                other,
                                "an alias is a non-empty string, e.g. `aliases = [\"java.io.IOException\"]`",
                            ))
                        }
                    }
                }
                Ok(())
            } else {
                Err(meta.error(
                    "unknown argument; expected `name = \"…\"`, `aliases = [\"…\"]` or `http`",
                ))
            }
        })?;
    }
    let (name, span) = name.unwrap_or_else(|| (snake_case(&v.ident.to_string()), v.ident.span()));
    Ok((name, span, aliases, http))
}

pub(crate) fn expand(input: TokenStream) -> TokenStream {
    match try_expand(input) {
        Ok(tokens) => tokens,
        Err(e) => e.to_compile_error(),
    }
}

fn try_expand(input: TokenStream) -> syn::Result<TokenStream> {
    let input: DeriveInput = syn::parse2(input)?;
    let Data::Enum(data) = &input.data else {
        return Err(syn::Error::new(
            input.ident.span(),
            "`ErrorClass` can be derived for an enum (one name per variant); for a struct, implement `error_class` by hand",
        ));
    };
    let mut names = Vec::new();
    let mut alias_pairs = Vec::new();
    let mut arms = Vec::new();
    let mut http_arms: Vec<TokenStream> = Vec::new();
    let mut errors: Option<syn::Error> = None;
    for v in &data.variants {
        match variant_name(v) {
            Ok((name, span, aliases, http)) => {
                if http.is_some() {
                    let ident = &v.ident;
                    http_arms.push(
                        quote!(Self::#ident(inner) => ::resil::HttpStatus::http_status(inner),),
                    );
                }
                for alias in aliases {
                    alias_pairs.push(quote!((#alias, #name)));
                }
                if names.contains(&name) {
                    let e = syn::Error::new(span, format!("two variants are named `{name}`; give one `#[error_class(name = \"…\")]`"));
                    match &mut errors {
                        Some(all) => all.combine(e),
                        None => errors = Some(e),
                    }
                }
                let ident = &v.ident;
                let pattern = match &v.fields {
                    Fields::Unit => quote!(Self::#ident),
                    Fields::Unnamed(_) => quote!(Self::#ident(..)),
                    Fields::Named(_) => quote!(Self::#ident { .. }),
                };
                arms.push(quote!(#pattern => #name));
                names.push(name);
            }
            Err(e) => match &mut errors {
                Some(all) => all.combine(e),
                None => errors = Some(e),
            },
        }
    }
    if let Some(e) = errors {
        return Err(e);
    }
    let ident = &input.ident;
    let (impl_g, ty_g, where_g) = input.generics.split_for_impl();
    let body = if arms.is_empty() {
        quote!(match *self {})
    } else {
        quote!(match self { #(#arms,)* })
    };
    let _ = input.span();
    // `#[error_class(http)]`: the status the marked variant's answer carries.
    let http_fn = (!http_arms.is_empty()).then(|| {
        quote! {
            fn http_status(&self) -> ::core::option::Option<u16> {
                #[allow(unreachable_patterns)]
                match self {
                    #(#http_arms)*
                    _ => ::core::option::Option::None,
                }
            }
        }
    });
    // One associated constant per class name that is an identifier, so an
    // attribute's `on = [upstream]` is checked against this type at compile
    // time (see `resil::checks::ErrorClassNames`).
    let names_ty = quote::format_ident!("ErrorClassesOf{}", ident);
    let vis = &input.vis;
    let consts = names.iter().filter_map(|n| {
        let ident = syn::parse_str::<syn::Ident>(n).ok()?;
        Some(quote!(pub const #ident: &'static str = #n;))
    });
    let names_doc = format!("The error classes of `{ident}`, for `on = [...]` checks.");
    Ok(quote! {
        #[doc = #names_doc]
        #[doc(hidden)]
        #vis struct #names_ty;
        #[allow(non_upper_case_globals, dead_code)]
        impl #names_ty {
            #(#consts)*
        }
        impl #impl_g ::resil::checks::ErrorClassNames for #ident #ty_g #where_g {
            type Names = #names_ty;
        }
        impl #impl_g ::resil::ErrorClass for #ident #ty_g #where_g {
            fn error_class(&self) -> &'static str {
                #body
            }
            fn error_classes() -> &'static [&'static str] {
                &[#(#names),*]
            }
            fn error_class_aliases() -> &'static [(&'static str, &'static str)] {
                &[#(#alias_pairs),*]
            }
            #http_fn
        }
    })
}

#[cfg(test)]
mod tests {
    use super::snake_case;

    #[test]
    fn variant_names_become_snake_case() {
        assert_eq!(snake_case("NotFound"), "not_found");
        assert_eq!(snake_case("Unavailable"), "unavailable");
        assert_eq!(snake_case("HTTPError"), "http_error");
        assert_eq!(snake_case("Io"), "io");
        assert_eq!(snake_case("Timeout503"), "timeout503");
    }
}
