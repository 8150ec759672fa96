//! Every semantic rule, each a spanned error, and nothing else. Turns the
//! model (spans everywhere) into the plan `expand.rs` follows (no spans but the
//! ones codegen re-uses for user-facing checks).

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::spanned::Spanned;
use syn::{
    FnArg, GenericArgument, Ident, Lit, Path, PathArguments, ReturnType, Type, TypeParamBound,
};

use resil_options::{Check, Section};

use crate::attr::{AspectArgs, BulkheadKind, Override};
use crate::diag::Errors;
use crate::item::ItemFn;
use crate::model::Model;
use resil_options::{order_text, Aspect, ORDER};

/// What to build, validated.
pub(crate) struct Plan {
    pub(crate) item: ItemFn,
    /// Outermost first.
    pub(crate) layers: Vec<Layer>,
    pub(crate) fallbacks: Vec<Path>,
    /// `on = [...]`: the classes the fallbacks handle (empty: every error).
    pub(crate) on: Vec<OnClass>,
    /// The path expansions reach resil by: `::resil`, or the `crate = "…"` override.
    pub(crate) krate: TokenStream,
    /// `criticality = <expr>`, from whichever attribute gave it.
    pub(crate) criticality: Option<syn::Expr>,
}

/// One entry of `on = [...]`.
pub(crate) struct OnClass {
    pub(crate) ident: Ident,
    /// `rejected` or a refusal's kind (`timeout`, …): no class of the fn's
    /// error type, nothing to check against its derive.
    pub(crate) refusal: bool,
}

/// What `on = [...]` may name besides the error type's own classes:
/// `rejected` (every refusal) and each refusal's `resil::ErrorKind` label.
pub(crate) const REFUSAL_CLASSES: [&str; 9] = [
    "rejected",
    "call_not_permitted",
    "bulkhead_full",
    "request_not_permitted",
    "timeout",
    "retry_budget_exhausted",
    "max_retries_exceeded",
    "deadline_exceeded",
    "throttled",
];

/// One primitive around the call.
pub(crate) struct Layer {
    pub(crate) aspect: Aspect,
    pub(crate) thread_pool: bool,
    /// `kind = "adaptive"`: the registry's adaptive bulkhead.
    pub(crate) adaptive: bool,
    /// The attribute, where checks of generated code about it point.
    pub(crate) span: Span,
    pub(crate) name: String,
    /// Builder calls applied once at call-site initialisation.
    pub(crate) settings: Vec<Setting>,
    /// `key = <expr>`: the layer is the key's instance of a keyed family.
    pub(crate) key: Option<syn::Expr>,
    /// `permits = <expr>`: the permits each call takes (a rate limiter,
    /// keyed or not).
    pub(crate) permits: Option<syn::Expr>,
}

/// `.max_attempts(5)` on the instance's config builder.
pub(crate) struct Setting {
    pub(crate) method: Ident,
    pub(crate) value: TokenStream,
}

/// What a literal override must be.
enum Expect {
    /// An integer in `min..=max`, emitted with the builder's integer type.
    Int {
        min: u64,
        max: u64,
        ty: &'static str,
        /// Appended to an out-of-range message.
        note: &'static str,
    },
    /// A percentage in (0, 100].
    Percent,
    /// A duration string with a unit, at least `min_nanos`.
    Duration {
        min_nanos: u128,
        min_text: &'static str,
    },
    Bool,
}

fn expect_for(aspect: Aspect, kind: BulkheadKind, key: &str) -> Option<Expect> {
    let section = match (aspect, kind) {
        (Aspect::Bulkhead, BulkheadKind::Semaphore) => Section::Bulkhead,
        (Aspect::Bulkhead, BulkheadKind::ThreadPool) => Section::ThreadPoolBulkhead,
        // No literal sets an adaptive bulkhead (its limit moves by itself).
        (Aspect::Bulkhead, BulkheadKind::Adaptive) => Section::AdaptiveBulkhead,
        _ => crate::attr::sections(aspect)[0],
    };
    Some(match resil_options::attribute(section, key)?.check? {
        Check::Int { min, max, ty } => Expect::Int {
            min,
            max,
            ty,
            note: "",
        },
        // An attribute cannot see the window type a file sets: it takes
        // what a count window takes, and the build checks a time window.
        Check::WindowSize { count_max, .. } => Expect::Int {
            min: 1,
            max: count_max,
            ty: "u32",
            note: WINDOW_NOTE,
        },
        Check::Percent => Expect::Percent,
        Check::Duration {
            min_nanos,
            min_text,
        } => Expect::Duration {
            min_nanos: u128::from(min_nanos),
            min_text,
        },
        Check::Bool => Expect::Bool,
    })
}

/// What the out-of-range message adds for a window size.
const WINDOW_NOTE: &str = " calls (a TIME_BASED window counts seconds and takes at most 604800)";

/// `"500ms"` → nanoseconds, by the option table's one duration parser (the
/// config files' own). An attribute must name the unit: a bare `"500"`, which
/// a file reads as milliseconds, is refused here as ambiguous in code.
pub(crate) fn parse_duration(text: &str) -> Option<u128> {
    if text.is_empty() || text.ends_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    resil_options::duration::parse_duration(text)
        .ok()
        .map(|d| d.as_nanos())
        .filter(|&n| n <= u64::MAX as u128)
}

fn check_override(
    aspect: Aspect,
    kind: BulkheadKind,
    o: &Override,
    errors: &mut Errors,
) -> Option<Setting> {
    let key = o.key.to_string();
    let Some(expect) = expect_for(aspect, kind, &key) else {
        let (needs, other) = match kind {
            BulkheadKind::Semaphore => ("thread_pool", "semaphore"),
            BulkheadKind::ThreadPool => ("semaphore", "thread_pool"),
            BulkheadKind::Adaptive => {
                errors.push(syn::Error::new(
                    o.key.span(),
                    format!("`{key}` sets a fixed bulkhead; an adaptive bulkhead's limit follows latency within the bounds of `resilience4j.adaptive-bulkhead.instances.<name>` (or `Registry::configure_adaptive_bulkhead`); remove `{key}`"),
                ));
                return None;
            }
        };
        errors.push(syn::Error::new(
            o.key.span(),
            format!("`{key}` configures a {needs} bulkhead, and this one is a {other} bulkhead; add `kind = \"{needs}\"` or remove `{key}`"),
        ));
        return None;
    };
    let span = o.lit.span();
    let value = match (&expect, &o.lit) {
        (Expect::Int { min, max, ty, note }, Lit::Int(i)) => match i.base10_parse::<u64>() {
            Ok(n) if (*min..=*max).contains(&n) => {
                let ty = Ident::new(ty, Span::call_site());
                quote!(#n as #ty)
            }
            _ if *min == 1 && i.base10_digits() == "0" => {
                errors.push(syn::Error::new(
                    span,
                    format!("`{key}` may not be 0; expected an integer in {min}..={max}"),
                ));
                return None;
            }
            _ => {
                errors.push(syn::Error::new(
                    span,
                    format!("`{key}` is out of range; expected an integer in {min}..={max}{note}"),
                ));
                return None;
            }
        },
        (Expect::Percent, Lit::Int(_) | Lit::Float(_)) => {
            let parsed = match &o.lit {
                Lit::Int(i) => i.base10_parse::<f64>().ok(),
                Lit::Float(f) => f.base10_parse::<f64>().ok(),
                _ => None,
            };
            match parsed {
                Some(p) if p > 0.0 && p <= 100.0 => {
                    let p = p as f32;
                    quote!(#p)
                }
                _ => {
                    errors.push(syn::Error::new(
                        span,
                        format!("`{key}` is a percentage in (0, 100]"),
                    ));
                    return None;
                }
            }
        }
        (
            Expect::Duration {
                min_nanos,
                min_text,
            },
            Lit::Str(s),
        ) => match parse_duration(&s.value()) {
            Some(n) if n >= *min_nanos => {
                let n = n as u64;
                quote!(::core::time::Duration::from_nanos(#n))
            }
            Some(_) => {
                errors.push(syn::Error::new(
                    span,
                    format!("`{key}` must be at least {min_text}"),
                ));
                return None;
            }
            None => {
                errors.push(syn::Error::new(
                        span,
                        format!("`{key}` takes a duration with a unit: `\"500ms\"`, `\"2s\"`; units are `ns`, `us`, `ms`, `s`, `m`, `h`"),
                    ));
                return None;
            }
        },
        (Expect::Bool, Lit::Bool(b)) => quote!(#b),
        _ => {
            let what = match expect {
                Expect::Int { .. } => "an integer literal",
                Expect::Percent => "a percentage literal such as `50` or `12.5`",
                Expect::Duration { .. } => "a duration string such as `\"500ms\"`",
                Expect::Bool => "`true` or `false`",
            };
            errors.push(syn::Error::new(span, format!("`{key}` takes {what}")));
            return None;
        }
    };
    Some(Setting {
        method: o.key.clone(),
        value,
    })
}

/// `Result<…>`, `io::Result<…>`, `anyhow::Result<…>`, `FetchResult<…>`: a
/// path whose last segment ends in `Result`. Other aliases are left to the
/// generated `ProtectedResult` check.
fn looks_like_result(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident.to_string().ends_with("Result")),
        Type::Group(g) => looks_like_result(&g.elem),
        Type::Paren(p) => looks_like_result(&p.elem),
        _ => false,
    }
}

/// `X` when `ty` is `impl Future<Output = X>` (a hand-written async fn).
fn future_output(ty: &Type) -> Option<&Type> {
    let Type::ImplTrait(it) = ty else { return None };
    it.bounds.iter().find_map(|b| {
        let TypeParamBound::Trait(t) = b else {
            return None;
        };
        let seg = t.path.segments.last()?;
        if seg.ident != "Future" {
            return None;
        }
        let PathArguments::AngleBracketed(args) = &seg.arguments else {
            return None;
        };
        args.args.iter().find_map(|a| match a {
            GenericArgument::AssocType(assoc) if assoc.ident == "Output" => Some(&assoc.ty),
            _ => None,
        })
    })
}

/// Tokens as a user writes them: `&self, sku: &str`, `Result<u32, E>`.
pub(crate) fn pretty(tokens: TokenStream) -> String {
    let mut s = tokens.to_string();
    for (from, to) in [
        (" :: ", "::"),
        (":: ", "::"),
        (" ::", "::"),
        (" : ", ": "),
        ("& ", "&"),
        (" <", "<"),
        ("< ", "<"),
        (" >", ">"),
        (" ,", ","),
        ("( ", "("),
        (" )", ")"),
        ("' ", "'"),
    ] {
        s = s.replace(from, to);
    }
    s
}

/// The first borrow in a return type (a reference or a lifetime other than
/// `'static`), and the owned type to suggest instead.
fn borrowed_in(ty: &Type) -> Option<(String, String)> {
    let not_static = |l: &syn::Lifetime| l.ident != "static";
    match ty {
        Type::Reference(r) if r.lifetime.as_ref().is_none_or(not_static) => {
            let owned = match &*r.elem {
                Type::Path(p) if p.path.is_ident("str") => "`String`".to_owned(),
                Type::Slice(s) => format!("`Vec<{}>`", pretty(s.elem.to_token_stream())),
                Type::Path(p) if p.path.is_ident("Path") => "`PathBuf`".to_owned(),
                other => format!("`{}` (or an `Arc` of it)", pretty(other.to_token_stream())),
            };
            Some((pretty(ty.to_token_stream()), owned))
        }
        Type::Reference(r) => borrowed_in(&r.elem),
        Type::Path(p) => {
            if let Some(q) = &p.qself {
                if let Some(found) = borrowed_in(&q.ty) {
                    return Some(found);
                }
            }
            p.path.segments.iter().find_map(|seg| {
                let PathArguments::AngleBracketed(args) = &seg.arguments else {
                    return None;
                };
                args.args.iter().find_map(|a| match a {
                    GenericArgument::Lifetime(l) if not_static(l) => Some((
                        pretty(ty.to_token_stream()),
                        "type that owns its data".to_owned(),
                    )),
                    GenericArgument::Type(t) => borrowed_in(t),
                    _ => None,
                })
            })
        }
        Type::Tuple(t) => t.elems.iter().find_map(borrowed_in),
        Type::Array(a) => borrowed_in(&a.elem),
        Type::Slice(s) => borrowed_in(&s.elem),
        Type::Paren(p) => borrowed_in(&p.elem),
        Type::Group(g) => borrowed_in(&g.elem),
        _ => None,
    }
}

fn mut_reference_arg(arg: &FnArg) -> Option<Span> {
    match arg {
        FnArg::Receiver(r) if r.reference.is_some() && r.mutability.is_some() => Some(r.span()),
        FnArg::Typed(t) => match &*t.ty {
            Type::Reference(r) if r.mutability.is_some() => Some(t.span()),
            _ => None,
        },
        _ => None,
    }
}

/// Every rule, each named, in the order their errors are reported: the fn,
/// then each attribute, then the stack they build (as serde_derive's
/// `internals/check.rs`). On success, the plan to expand.
pub(crate) fn check(model: Model, errors: &mut Errors) -> Option<Plan> {
    let Model {
        item,
        aspects,
        already_protected,
    } = model;
    check_not_protected_twice(already_protected, &aspects, errors);
    check_not_const(&item, errors);
    let returns_future = check_output(&item, errors);
    let seen = check_one_attribute_per_aspect(&aspects, errors);
    let once = check_once_per_fn(&aspects, errors);
    let on = check_on(&aspects, errors);
    let mut layers = check_aspects(&aspects, &item, returns_future, errors);
    check_order(&mut layers, once.order, &seen, errors);
    check_thread_pool(&layers, &aspects, &item, returns_future, errors);
    check_mut_arguments(&layers, &item, errors);
    if !errors.is_empty() {
        return None;
    }
    Some(Plan {
        item,
        layers,
        fallbacks: once.fallback.map(|f| f.0.clone()).unwrap_or_default(),
        on,
        krate: match once.krate {
            Some((path, _)) => path.to_token_stream(),
            None => quote!(::resil),
        },
        criticality: once.criticality.map(|c| c.0.clone()),
    })
}

/// A fn an expansion protected already (a renamed resil attribute above
/// could not see this one).
fn check_not_protected_twice(already_protected: bool, aspects: &[AspectArgs], errors: &mut Errors) {
    if already_protected {
        errors.push(syn::Error::new(
            aspects[0].span,
            format!("this fn is protected already by a resil attribute above it, which could not see this one: a renamed resil attribute is not recognised as a sibling; write `#[resil::{}(…)]`", aspects[0].aspect),
        ));
    }
}

/// Protection happens at run time: no `const fn`.
fn check_not_const(item: &ItemFn, errors: &mut Errors) {
    if let Some(c) = &item.sig.constness {
        errors.push(syn::Error::new(
            c.span,
            "a resil attribute cannot protect a `const fn`: protection happens at run time; remove `const`",
        ));
    }
}

/// The protected fn returns `Result<T, E>` with `'static` types, from an
/// `async fn` rather than a fn returning a future. A type alias is left to
/// the generated check; a missing return type is certainly wrong. Returns
/// whether the fn returns a future (its own error is reported here, and
/// later rules stay quiet about it).
fn check_output(item: &ItemFn, errors: &mut Errors) -> bool {
    let sig = &item.sig;
    let future = match (&item.async_trait, &sig.asyncness, &sig.output) {
        (None, None, ReturnType::Type(_, ty)) => future_output(ty).map(|out| (ty, out)),
        _ => None,
    };
    if let Some((ty, out)) = future {
        errors.push(syn::Error::new_spanned(
            ty,
            format!(
                "a resil attribute protects an `async fn`, not a fn returning a future; write `async fn {}{}({}) -> {}`",
                sig.ident,
                pretty(sig.generics.to_token_stream()),
                pretty(sig.inputs.to_token_stream()),
                pretty(out.to_token_stream()),
            ),
        ));
        return true;
    }
    if let Some((borrowed, owned)) = item.output().and_then(borrowed_in) {
        errors.push(syn::Error::new_spanned(
            item.output(),
            format!(
                "the `Ok` and error types of a protected fn must be `'static`: resil classifies results by type, and a retry or a fallback outlives the call; `{borrowed}` borrows, return an owned {owned} instead"
            ),
        ));
    }
    match (&item.async_trait, &sig.output) {
        (None, ReturnType::Default) => errors.push(syn::Error::new(
            sig.ident.span(),
            format!(
                "a protected fn must return `Result<T, E>`: resil needs an error to count and to retry on; give `{}` a `Result` return type",
                sig.ident
            ),
        )),
        (None, ReturnType::Type(_, ty)) if !looks_like_result(ty) => errors.push(
            syn::Error::new(
                ty.span(),
                format!(
                    "a protected fn must return `Result<T, E>`, not `{}`: resil needs an error to count and to retry on",
                    ty.to_token_stream().to_string().replace(" < ", "<").replace(" >", ">").replace("& ", "&")
                ),
            ),
        ),
        _ => {}
    }
    false
}

/// One attribute per aspect. Returns the aspects the fn has.
fn check_one_attribute_per_aspect(aspects: &[AspectArgs], errors: &mut Errors) -> Vec<Aspect> {
    let mut seen: Vec<Aspect> = Vec::new();
    for a in aspects {
        if seen.contains(&a.aspect) {
            errors.push(syn::Error::new(
                a.span,
                format!("duplicate `{}` attribute: a fn has at most one of each; merge their arguments into one", a.aspect),
            ));
        }
        seen.push(a.aspect);
    }
    seen
}

/// The arguments a fn gives once, on any one of its attributes.
struct OncePerFn<'a> {
    fallback: Option<&'a (Vec<Path>, Span)>,
    order: Option<&'a (Vec<Ident>, Span)>,
    krate: Option<&'a (Path, Span)>,
    criticality: Option<&'a (syn::Expr, Span)>,
}

/// One `crate`, one fallback list, one `order` and one `criticality` per fn.
fn check_once_per_fn<'a>(aspects: &'a [AspectArgs], errors: &mut Errors) -> OncePerFn<'a> {
    let mut once = OncePerFn {
        fallback: None,
        order: None,
        krate: None,
        criticality: None,
    };
    for a in aspects {
        if let Some(k) = &a.krate {
            if once.krate.is_some() {
                errors.push(syn::Error::new(
                    k.1,
                    "a fn has one `crate`; give it on one attribute only",
                ));
            } else {
                once.krate = Some(k);
            }
        }
        if let Some(f) = &a.fallback {
            if once.fallback.is_some() {
                errors.push(syn::Error::new(
                    f.1,
                    "a fn has one fallback list; give every fallback in one `fallback = [first, second]`",
                ));
            } else {
                once.fallback = Some(f);
            }
        }
        if let Some(c) = &a.criticality {
            if once.criticality.is_some() {
                errors.push(syn::Error::new(
                    c.1,
                    "a fn has one `criticality`: it is the class of the whole call; give it on one attribute only",
                ));
            } else {
                once.criticality = Some(c);
            }
        }
        if let Some(o) = &a.order {
            if once.order.is_some() {
                errors.push(syn::Error::new(
                    o.1,
                    "a fn has one `order`; give it on one attribute only",
                ));
            } else {
                once.order = Some(o);
            }
        }
    }
    once
}

/// `on = [...]` goes beside the `fallback` it narrows, names each class
/// once, and is never empty. Returns its entries (the classes of the fn's
/// error type are checked against its `#[derive(ErrorClass)]` by generated
/// code, at each name).
fn check_on(aspects: &[AspectArgs], errors: &mut Errors) -> Vec<OnClass> {
    let mut out = Vec::new();
    for a in aspects {
        let Some((idents, span)) = &a.on else {
            continue;
        };
        if a.fallback.is_none() {
            errors.push(syn::Error::new(
                *span,
                "`on` names the error classes the fallback handles; give it beside the `fallback = …` it narrows, on the same attribute",
            ));
            continue;
        }
        if idents.is_empty() {
            errors.push(syn::Error::new(
                *span,
                "`on = []` handles nothing; list the error classes the fallback takes over, e.g. `on = [upstream, rejected]`, or remove `on` to handle every error",
            ));
        }
        let mut seen: Vec<String> = Vec::new();
        for ident in idents {
            let text = ident.to_string();
            if seen.contains(&text) {
                errors.push(syn::Error::new(
                    ident.span(),
                    format!("`{text}` appears twice in `on`; list each class once"),
                ));
                continue;
            }
            seen.push(text.clone());
            out.push(OnClass {
                ident: ident.clone(),
                refusal: REFUSAL_CLASSES.contains(&text.as_str()),
            });
        }
    }
    out
}

/// Each attribute's own rules ([`check_aspect`]), in the order written.
fn check_aspects(
    aspects: &[AspectArgs],
    item: &ItemFn,
    returns_future: bool,
    errors: &mut Errors,
) -> Vec<Layer> {
    aspects
        .iter()
        .filter_map(|a| check_aspect(a, item, returns_future, errors))
        .collect()
}

/// The order: the one table (`resil_options::ORDER`), or a complete,
/// repetition-free `order = [...]`; sorts `layers` by it.
fn check_order(
    layers: &mut [Layer],
    order: Option<&(Vec<Ident>, Span)>,
    seen: &[Aspect],
    errors: &mut Errors,
) {
    let Some((idents, span)) = order else {
        layers.sort_by_key(|l| l.aspect.rank());
        return;
    };
    let mut listed: Vec<Aspect> = Vec::new();
    for ident in idents {
        match Aspect::from_name(&ident.to_string()) {
            None => errors.push(syn::Error::new(
                ident.span(),
                format!("unknown aspect `{ident}` in `order`; expected one of {}", order_text()),
            )),
            Some(a) if listed.contains(&a) => errors.push(syn::Error::new(
                ident.span(),
                format!("`{a}` appears twice in `order`; list each attribute once"),
            )),
            Some(a) if !seen.contains(&a) => errors.push(syn::Error::new(
                ident.span(),
                format!("`order` lists `{a}`, but the fn has no `#[resil::{a}]`; list exactly the fn's attributes"),
            )),
            Some(a) => listed.push(a),
        }
    }
    let missing: Vec<&str> = ORDER
        .iter()
        .filter(|a| seen.contains(a) && !listed.contains(a))
        .map(|a| a.name())
        .collect();
    if !missing.is_empty() {
        errors.push(syn::Error::new(
            *span,
            format!(
                "`order` must list every resil attribute on the fn, outermost first; add `{}`",
                missing.join("`, `")
            ),
        ));
    }
    layers.sort_by_key(|l| listed.iter().position(|&a| a == l.aspect));
}

/// A thread-pool bulkhead runs the (blocking) body on its own threads: it
/// must be the innermost layer and the fn async.
fn check_thread_pool(
    layers: &[Layer],
    aspects: &[AspectArgs],
    item: &ItemFn,
    returns_future: bool,
    errors: &mut Errors,
) {
    let Some(pos) = layers.iter().position(|l| l.thread_pool) else {
        return;
    };
    let bulkhead = aspects.iter().find(|a| a.aspect == Aspect::Bulkhead);
    let at = bulkhead
        .and_then(|b| b.kind.map(|k| k.1))
        .unwrap_or(Span::call_site());
    if returns_future {
        // Reported by `check_output`, with the `async fn` to write.
    } else if !item.is_async() {
        errors.push(syn::Error::new(
            at,
            "a thread-pool bulkhead hands the body to its own threads and must be awaited; make the fn `async` (its body stays blocking code) or use `kind = \"semaphore\"`",
        ));
    } else if pos + 1 != layers.len() {
        errors.push(syn::Error::new(
            at,
            "a thread-pool bulkhead runs the blocking body itself, so it must be innermost; put `bulkhead` last in `order`",
        ));
    }
}

/// Retry attempts of an async fn each need their own future; one that holds
/// an exclusive borrow cannot be made again while the retry holds the
/// closure that makes them. Hedged attempts run side by side, so they
/// cannot share one either.
fn check_mut_arguments(layers: &[Layer], item: &ItemFn, errors: &mut Errors) {
    let has_retry = layers.iter().any(|l| l.aspect == Aspect::Retry);
    let message = if has_retry && item.is_async() {
        "`retry` cannot re-use an `&mut` argument across the attempts of an async fn; take it by shared reference (with interior mutability) or by value (`Clone`)"
    } else if layers.iter().any(|l| l.aspect == Aspect::Hedge) {
        "`hedge` runs attempts side by side, so they cannot share an `&mut` argument; take it by shared reference (with interior mutability) or by value (`Clone`)"
    } else {
        return;
    };
    for arg in &item.sig.inputs {
        if let Some(span) = mut_reference_arg(arg) {
            errors.push(syn::Error::new(span, message));
        }
    }
}

/// One attribute's own rules: its `name`, what its aspect needs of the fn,
/// and its literal settings.
fn check_aspect(
    a: &AspectArgs,
    item: &ItemFn,
    returns_future: bool,
    errors: &mut Errors,
) -> Option<Layer> {
    let name = match &a.name {
        None if a.name_unknowable => None,
        None => {
            errors.push(syn::Error::new(
                a.span,
                format!("missing `name`: every resil attribute names its registry instance; write `#[resil::{}(name = \"…\")]`", a.aspect),
            ));
            None
        }
        Some((n, span)) if n.trim().is_empty() => {
            errors.push(syn::Error::new(
                *span,
                "`name` may not be empty; name the registry instance, e.g. `name = \"inventory-query\"`",
            ));
            None
        }
        Some((n, _)) => Some(n.clone()),
    };
    if a.aspect == Aspect::Hedge && !item.is_async() {
        errors.push(syn::Error::new(
            item.sig.fn_token.span,
            "`hedge` runs attempts side by side and keeps the first good answer, which only futures can do; make the fn `async`",
        ));
    }
    if a.aspect == Aspect::TimeLimiter && !item.is_async() && !returns_future {
        errors.push(syn::Error::new(
            item.sig.fn_token.span,
            "`time_limiter` cannot protect a sync fn: a timeout can only stop waiting for a future, it cannot interrupt a running thread; make the fn `async`",
        ));
    }
    let kind = a.kind.map(|k| k.0).unwrap_or(BulkheadKind::Semaphore);
    let mut settings = Vec::new();
    for o in &a.overrides {
        if let Some(s) = check_override(a.aspect, kind, o, errors) {
            settings.push(s);
        }
    }
    if kind == BulkheadKind::ThreadPool {
        let int = |key: &str| {
            a.overrides
                .iter()
                .find(|o| o.key == key)
                .and_then(|o| match &o.lit {
                    Lit::Int(i) => i.base10_parse::<u64>().ok().map(|n| (n, o.lit.span())),
                    _ => None,
                })
        };
        if let (Some((core, _)), Some((max, span))) =
            (int("core_thread_pool_size"), int("max_thread_pool_size"))
        {
            if max < core {
                errors.push(syn::Error::new(
                    span,
                    format!(
                        "`max_thread_pool_size` must be at least `core_thread_pool_size` ({core})"
                    ),
                ));
            }
        }
    }
    if let Some((_, span)) = &a.key {
        if kind != BulkheadKind::Semaphore && a.aspect == Aspect::Bulkhead {
            errors.push(syn::Error::new(
                *span,
                "`key` gives one semaphore bulkhead per key; a thread-pool or adaptive bulkhead cannot be keyed: drop `kind` or `key`",
            ));
        }
        if let Some(o) = a.overrides.first() {
            errors.push(syn::Error::new(
                o.key.span(),
                format!("a keyed family is configured by its instance `name` (file or code), not per call site: drop `{}` here and set it under `instances.<name>`", o.key),
            ));
        }
    }
    Some(Layer {
        key: a.key.as_ref().map(|k| k.0.clone()),
        permits: a.permits.as_ref().map(|p| p.0.clone()),
        aspect: a.aspect,
        thread_pool: kind == BulkheadKind::ThreadPool,
        adaptive: a.aspect == Aspect::Bulkhead && kind == BulkheadKind::Adaptive,
        span: a.kind.map_or(a.span, |k| k.1),
        name: name?,
        settings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_need_a_unit_and_fit_in_u64_nanoseconds() {
        assert_eq!(parse_duration("500ms"), Some(500_000_000));
        assert_eq!(parse_duration("0ms"), Some(0));
        assert_eq!(parse_duration("2s"), Some(2_000_000_000));
        assert_eq!(parse_duration("1m"), Some(60_000_000_000));
        assert_eq!(parse_duration("500"), None);
        assert_eq!(parse_duration("ms"), None);
        assert_eq!(parse_duration("5 s"), None);
        assert_eq!(parse_duration("999999999999h"), None);
        // The config files' parser: ISO-8601 and days too.
        assert_eq!(parse_duration("PT0.5S"), Some(500_000_000));
        assert_eq!(parse_duration("1d"), Some(86_400_000_000_000));
    }
}
