//! Codegen only: the plan is valid by now. The fn keeps its signature (an
//! argument pattern is renamed or loses its `mut` only when the stack re-uses
//! it) and its body becomes
//!
//! ```text
//! static __RESIL_SITE: Site<(Handle<Retry>, …)> = Site::new();  // one per call site
//! let handles = __RESIL_SITE.get(|| (registry().retry("name"), …));  // looked up once
//! let retry: &Retry = handles.0.get();                   // one atomic load per primitive
//!                                      // (a rate limiter: `SiteRateLimiter`, local or Redis)
//! let out = Retry::call_async_nested(retry, || { let arg = arg.reuse();
//!     circuit_breaker_async(breaker, … Bulkhead::call_async(bulkhead, async move { body }) …) }).await;
//! match out { Ok(v) => Ok(v), Err(e) => the most specific fallback, or `E: From<Rejection>` }
//! ```

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{AttrStyle, FnArg, Ident, Pat, PatIdent, Path, Type};

use crate::check;
use crate::model::PROTECTED_MARKER;
use crate::respan::{mixed, respan};
use crate::valid::{Layer, Plan};
use resil_options::Aspect;

/// How one parameter is passed on.
struct Param {
    /// What the body and the fallback call it by (`self` for a receiver).
    name: TokenStream,
    /// The statement that binds a fresh copy for one more use, if any.
    rebind: TokenStream,
}

fn private(krate: &TokenStream) -> TokenStream {
    quote!(#krate::__private)
}

/// Where the compile-time checks live: named directly (not through
/// `__private`) so their diagnostics print `resil::checks::…`.
fn checks(krate: &TokenStream) -> TokenStream {
    quote!(#krate::checks)
}

/// Replaces the `self` keyword in `tokens` by `with` (not `self::` paths).
fn replace_self(tokens: TokenStream, with: &Ident) -> TokenStream {
    let mut out = Vec::new();
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, t) in tokens.iter().enumerate() {
        match t {
            TokenTree::Ident(id) if id == "self" => {
                let path =
                    matches!(tokens.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                if path {
                    out.push(t.clone());
                } else {
                    let mut id = with.clone();
                    id.set_span(t.span().resolved_at(with.span()));
                    out.push(TokenTree::Ident(id));
                }
            }
            TokenTree::Group(g) => {
                let mut ng = proc_macro2::Group::new(g.delimiter(), replace_self(g.stream(), with));
                ng.set_span(g.span());
                out.push(TokenTree::Group(ng));
            }
            other => out.push(other.clone()),
        }
    }
    out.into_iter().collect()
}

pub(crate) fn expand(mut plan: Plan) -> TokenStream {
    let krate = plan.krate.clone();
    let p = private(&krate);
    let c = checks(&krate);
    let is_async = plan.item.is_async();
    // A retry or a hedge runs the body more than once: each run re-binds
    // the arguments.
    let has_retry = plan
        .layers
        .iter()
        .any(|l| matches!(l.aspect, Aspect::Retry | Aspect::Hedge));
    let reuse = has_retry || !plan.fallbacks.is_empty();
    let ret: Type = plan
        .item
        .output()
        .cloned()
        .expect("valid.rs requires a return type");

    // Parameters: how each is re-used, and the signature adjusted for it.
    let thread_pool = plan.layers.iter().any(|l| l.thread_pool);
    let mut pool_args = TokenStream::new();
    let self_alias = mixed("__resil_self");
    let mut replace_receiver = false;
    let mut params = Vec::new();
    for (i, arg) in plan.item.sig.inputs.iter_mut().enumerate() {
        match arg {
            FnArg::Receiver(r) => {
                let by_ref = matches!(*r.ty, Type::Reference(_));
                let by_mut_ref = matches!(&*r.ty, Type::Reference(t) if t.mutability.is_some());
                let rebind = if !reuse || (by_ref && !by_mut_ref) || (by_mut_ref && !is_async) {
                    TokenStream::new()
                } else if by_mut_ref {
                    replace_receiver = true;
                    quote!(let #self_alias = &mut *self;)
                } else {
                    replace_receiver = true;
                    let span = r.span();
                    quote_spanned!(span=> let #self_alias = #c::Reuse::reuse(&self);)
                };
                if reuse && r.reference.is_none() {
                    r.mutability = None;
                }
                params.push(Param {
                    name: quote!(self),
                    rebind,
                });
            }
            FnArg::Typed(t) => {
                let span = t.span();
                let is_mut_ref = matches!(&*t.ty, Type::Reference(r) if r.mutability.is_some());
                match &mut *t.pat {
                    Pat::Ident(PatIdent {
                        by_ref: None,
                        subpat: None,
                        mutability,
                        ident,
                        ..
                    }) => {
                        let ident = ident.clone();
                        let m = if reuse { mutability.take() } else { None };
                        if thread_pool {
                            let keep = if reuse { None } else { mutability.take() };
                            // Every token at the argument: a type that cannot
                            // move is reported once, there.
                            pool_args.extend(respan(
                                quote!(let #keep #ident = #c::PoolArg::moved(#ident);),
                                span,
                            ));
                        }
                        let rebind = if is_mut_ref {
                            quote!(let #m #ident = &mut *#ident;)
                        } else {
                            quote_spanned!(span=> let #m #ident = #c::Reuse::reuse(&#ident);)
                        };
                        params.push(Param {
                            name: ident.to_token_stream(),
                            rebind,
                        });
                    }
                    pat if reuse => {
                        let original = pat.clone();
                        let renamed = format_ident!("__resil_arg{}", i, span = Span::mixed_site());
                        *pat = Pat::Ident(PatIdent {
                            attrs: Vec::new(),
                            by_ref: None,
                            mutability: None,
                            ident: renamed.clone(),
                            subpat: None,
                        });
                        let rebind = if is_mut_ref {
                            quote!(let #original = &mut *#renamed;)
                        } else {
                            quote_spanned!(span=> let #original = #c::Reuse::reuse(&#renamed);)
                        };
                        params.push(Param {
                            name: renamed.to_token_stream(),
                            rebind,
                        });
                    }
                    _ => params.push(Param {
                        name: TokenStream::new(),
                        rebind: TokenStream::new(),
                    }),
                }
            }
        }
    }
    let rebind_all: TokenStream = params.iter().map(|p| p.rebind.clone()).collect();

    let mut body = plan.item.body_block();
    if replace_receiver {
        body = replace_self(body, &self_alias);
    }

    // One static per call site holding every primitive's handle: one
    // `OnceLock` check per call, then one atomic load per primitive, made
    // where the primitive is called, so the retry's closure captures one
    // pointer (the site's handles), not one per primitive.
    let mut handles: Vec<TokenStream> = Vec::new();
    let mut types = Vec::new();
    let mut inits = Vec::new();
    let all = mixed("__resil_handles");
    // Per call, before the stack runs: each keyed layer's handle for the
    // call's key (the key's borrow ends here) and its permits.
    let mut keyed_lets = TokenStream::new();
    let mut permits = Vec::new();
    for (i, layer) in plan.layers.iter().enumerate() {
        let index = syn::Index::from(i);
        // `permits = <expr>` (a rate limiter, keyed or not): evaluated once
        // per call, before the stack runs, at the expression's token.
        permits.push(match &layer.permits {
            Some(expr) => {
                let pn = format_ident!("__resil_permits{}", i, span = Span::mixed_site());
                let check = respan(quote!(#c::Permits::permits), expr.span());
                keyed_lets.extend(quote!(let #pn: u32 = #check(#expr);));
                pn.to_token_stream()
            }
            None => quote!(1u32),
        });
        if let Some(key) = &layer.key {
            let (family, lookup) = match layer.aspect {
                Aspect::RateLimiter => ("KeyedRateLimiter", "keyed_rate_limiter"),
                Aspect::CircuitBreaker => ("KeyedCircuitBreaker", "keyed_circuit_breaker"),
                Aspect::Retry => ("KeyedRetry", "keyed_retry"),
                _ => ("KeyedBulkhead", "keyed_bulkhead"),
            };
            let family = Ident::new(family, Span::call_site());
            let lookup = Ident::new(lookup, Span::call_site());
            let name = &layer.name;
            types.push(quote!(#p::#family));
            inits.push(quote!(#p::#lookup(#name)));
            let kh = format_ident!("__resil_kh{}", i, span = Span::mixed_site());
            let k = Ident::new("__resil_k", Span::call_site());
            // Spanned at the key: a value that cannot be a key is reported there.
            let probe = respan(quote!((&#c::KeyProbe(#k)).__resil_key()), key.span());
            keyed_lets.extend(quote! {
                let #kh = match &(#key) {
                    #k => {
                        #[allow(unused_imports)]
                        use #c::{AnyKey as _, StrKey as _};
                        #p::#family::get(&#all.#index, #probe)
                    }
                };
            });
            handles.push(match layer.aspect {
                Aspect::CircuitBreaker => quote!(&*#kh),
                // The retry on the key's budget (`OnBudget` is `Copy`).
                Aspect::Retry => quote!(#p::RetryKeyHandle::on(&#kh)),
                _ => quote!(&#kh),
            });
            continue;
        }
        let (ty, get) = primitive(layer);
        let name = &layer.name;
        let init = if layer.settings.is_empty() {
            quote!(#p::#get(#name))
        } else {
            let with = format_ident!("{}_with", get);
            let b = mixed("__resil_b");
            let calls = layer.settings.iter().map(|s| {
                let m = &s.method;
                let v = &s.value;
                quote!(.#m(#v))
            });
            // What the registry compares between call sites, and shows
            // in the snapshot as `attribute at file:line`.
            let literals = layer.settings.iter().map(|s| {
                let key = s.method.to_string();
                let value = s.value.to_string();
                quote!((#key, #value))
            });
            quote!(#p::#with(
                #name,
                &#p::AttributeSite {
                    location: ::core::concat!(::core::file!(), ":", ::core::line!()),
                    literals: &[#(#literals),*],
                },
                |#b| #b #(#calls)*
            ))
        };
        inits.push(init);
        if layer.aspect == Aspect::RateLimiter {
            // Not a registry handle: the site's limiter on the backend the
            // settings choose (local, or Redis with the `redis` feature).
            types.push(quote!(#p::#ty));
            handles.push(quote!(&#all.#index));
        } else {
            types.push(quote!(#p::Handle<#p::#ty>));
            handles.push(quote!(#p::Handle::get(&#all.#index)));
        }
    }
    let site = mixed("__RESIL_SITE");
    let sites = quote! {
        static #site: #p::Site<(#(#types,)*)> = #p::Site::new();
        let #all: &'static (#(#types,)*) = #site.get(|| {
            // The fn's error type, registered when it derives `ErrorClass`:
            // the file's lists and `resil.http` sets then classify it.
            #[allow(unused_imports)]
            use #p::{NoErrorClass as _, RegisterErrorClass as _};
            (&#p::ErrorTypeOf::<#ret>(::core::marker::PhantomData)).register_error_class();
            (#(#inits,)*)
        });
    };

    // The stack, innermost first.
    let n = plan.layers.len();
    let typed_body = quote!(#p::returns::<#ret>(#body));
    let mut expr = TokenStream::new();
    for i in (0..n).rev() {
        let layer = &plan.layers[i];
        let h = &handles[i];
        let innermost = i + 1 == n;
        let n = &permits[i];
        expr = if innermost {
            innermost_call(&krate, layer, h, n, &rebind_all, &typed_body, is_async)
        } else {
            outer_call(&krate, layer, h, n, &rebind_all, expr, is_async)
        };
    }
    let top_rebind = if !has_retry && reuse {
        rebind_all.clone()
    } else {
        TokenStream::new()
    };
    let out = mixed("__resil_out");
    let (trace, traced, args) = call_trace(&krate, &plan.layers, &all, is_async);
    // `criticality = <expr>`: evaluated once, before the stack runs (over
    // the arguments as passed), and the whole stack runs in its scope.
    //
    // Whether the call gets its span is decided before the stack runs: an
    // async fn then awaits the stack's future itself, exactly as with no
    // tracing at all (wrapped, even in a disabled span, a stack's future is
    // moved once more, which cost 13 ns a call in `benches/tracing.rs`); the
    // stack is made by one closure, so the body is written once, and the
    // closure is `#[inline(always)]` because it is called from two places
    // (`traced_call` does the same for a sync stack).
    let class = mixed("__resil_class");
    let stack = mixed("__resil_stack");
    let make_stack = quote!(let #stack = #p::stack(#[inline(always)] || { #top_rebind #expr }););
    let sync_stack = quote!(#[inline(always)] || { #top_rebind #expr });
    let (class_let, run) = match &plan.criticality {
        Some(e) => {
            let span = e.span();
            let of = respan(quote!(#c::IsCriticality::class), span);
            let class_let = quote_spanned!(span=> let #class = #of(#e););
            let run = if is_async {
                quote!(
                    #make_stack
                    let #out = if #p::call_spans_enabled() {
                        #p::Criticality::scope(#class, #traced(#args, #stack())).await
                    } else {
                        #p::Criticality::scope(#class, #stack()).await
                    };
                )
            } else {
                quote!(let #out = #p::Criticality::sync_scope(#class, || #traced(#args, #sync_stack));)
            };
            (class_let, run)
        }
        None if is_async => (
            TokenStream::new(),
            quote!(
                #make_stack
                let #out = if #p::call_spans_enabled() {
                    #traced(#args, #stack()).await
                } else {
                    #stack().await
                };
            ),
        ),
        None => (
            TokenStream::new(),
            quote!(let #out = #traced(#args, #sync_stack);),
        ),
    };

    let ret_span = ret.span();
    let result_check = quote_spanned!(ret_span=> #c::protected_result::<#ret>(););
    // Where a missing `From<Rejection>` is reported: the error type as
    // written (`AppError` in `Result<u32, AppError>`), else the return type.
    let (err_span, err_ty) = match error_type(&ret) {
        Some(e) => (e.span(), e.to_token_stream()),
        None => (
            ret_span,
            quote_spanned!(ret_span=> <#ret as #c::ProtectedResult>::Err),
        ),
    };
    let finish = if plan.fallbacks.is_empty() {
        // The path to resil keeps its own span: a wrong `crate = "…"` is
        // reported once, at that literal.
        // A trait method called on the error type as written: rustc reports
        // a missing `From<Rejection>` at that token, naming no item of
        // resil's source.
        quote_spanned!(err_span=> <#err_ty as #c::AcceptsRejection>::into_fn_result(#out))
    } else {
        let receiver = plan
            .item
            .sig
            .inputs
            .first()
            .is_some_and(|a| matches!(a, FnArg::Receiver(_)));
        let paths: Vec<TokenStream> = plan
            .fallbacks
            .iter()
            .map(|f| fallback_path(f, receiver))
            .collect();
        let names: Vec<TokenStream> = params.iter().map(|p| p.name.clone()).collect();
        let types: Vec<TokenStream> = plan.item.sig.inputs.iter().map(arg_type).collect();
        check::dispatch(&check::Protected {
            out: &out,
            fallbacks: &plan.fallbacks,
            on: &plan.on,
            paths: &paths,
            args: &names,
            arg_types: &types,
            ret: &ret,
            is_async,
            fn_name: &plan.item.sig.ident,
            checks: &c,
            err_span,
        })
    };

    let marker = Ident::new(PROTECTED_MARKER, Span::call_site());
    let block = quote! {
        #[allow(dead_code)]
        const #marker: () = ();
        #result_check
        #pool_args
        #sites
        #keyed_lets
        #trace
        #class_let
        #run
        #finish
    };

    let item = &plan.item;
    let mut attrs = item.attrs.clone();
    for a in &item.inner_attrs {
        let mut a = a.clone();
        a.style = AttrStyle::Outer;
        attrs.push(a);
    }
    let vis = &item.vis;
    let sig = &item.sig;
    let brace = item.brace_span;
    let full_body = match &item.async_trait {
        Some(at) => {
            let prefix = &at.prefix;
            let boxing = &at.boxing;
            quote!(#prefix #boxing(async move { #block }))
        }
        None => block,
    };
    let mut group = proc_macro2::Group::new(proc_macro2::Delimiter::Brace, full_body);
    group.set_span(brace);
    quote! {
        #(#attrs)*
        #vis #sig #group
    }
}

/// The call's `resil.call` span: the site's `static CallTrace` (instance,
/// aspects outermost first, each aspect's instance name), and the call of
/// `__private::traced_*` the stack runs through and its first arguments
/// (the trace and the breaker's handle, for its state; the stack's closure
/// or future comes last).
fn call_trace(
    krate: &TokenStream,
    layers: &[Layer],
    handles: &Ident,
    is_async: bool,
) -> (TokenStream, TokenStream, TokenStream) {
    let p = private(krate);
    let instance = layers.first().map(|l| l.name.as_str()).unwrap_or_default();
    let aspects = layers
        .iter()
        .map(|l| l.aspect.name())
        .collect::<Vec<_>>()
        .join(",");
    let name_of = |aspect: Aspect| match layers.iter().find(|l| l.aspect == aspect) {
        Some(l) => {
            let name = &l.name;
            quote!(::core::option::Option::Some(#name))
        }
        None => quote!(::core::option::Option::None),
    };
    let retry = name_of(Aspect::Retry);
    let hedging = name_of(Aspect::Hedge);
    let circuit_breaker = name_of(Aspect::CircuitBreaker);
    let rate_limiter = name_of(Aspect::RateLimiter);
    let time_limiter = name_of(Aspect::TimeLimiter);
    let bulkhead = name_of(Aspect::Bulkhead);
    let chaos = name_of(Aspect::Chaos);
    let throttler = name_of(Aspect::Throttler);
    // A keyed breaker is not a registry handle: its state is the key's.
    let breaker = match layers
        .iter()
        .position(|l| l.aspect == Aspect::CircuitBreaker && l.key.is_none())
    {
        Some(i) => {
            let index = syn::Index::from(i);
            quote!(::core::option::Option::Some(&#handles.#index))
        }
        None => quote!(::core::option::Option::None),
    };
    let trace = mixed("__RESIL_TRACE");
    let statics = quote! {
        static #trace: #p::CallTrace = #p::CallTrace {
            instance: #instance,
            aspects: #aspects,
            retry: #retry,
            hedging: #hedging,
            circuit_breaker: #circuit_breaker,
            rate_limiter: #rate_limiter,
            time_limiter: #time_limiter,
            bulkhead: #bulkhead,
            chaos: #chaos,
            throttler: #throttler,
        };
    };
    let f = if is_async {
        "traced_async"
    } else {
        "traced_call"
    };
    let f = Ident::new(f, Span::call_site());
    (statics, quote!(#p::#f), quote!(&#trace, #breaker))
}

/// `E` in `Result<T, E>` as written (any path ending in `Result` with two
/// type arguments).
fn error_type(ret: &Type) -> Option<&Type> {
    let Type::Path(p) = ret else { return None };
    let seg = p.path.segments.last()?;
    if !seg.ident.to_string().ends_with("Result") {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &seg.arguments else {
        return None;
    };
    let mut types = args.args.iter().filter_map(|a| match a {
        syn::GenericArgument::Type(t) => Some(t),
        _ => None,
    });
    let _ok = types.next()?;
    types.next()
}

/// The parameter's type for the fallback check, `_` where it cannot be
/// written in an expression (`impl Trait`).
fn arg_type(arg: &FnArg) -> TokenStream {
    let ty = match arg {
        FnArg::Receiver(r) => &r.ty,
        FnArg::Typed(t) => &t.ty,
    };
    if mentions_impl(ty.to_token_stream()) {
        quote!(_)
    } else {
        ty.to_token_stream()
    }
}

fn mentions_impl(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|t| match t {
        TokenTree::Ident(i) => i == "impl",
        TokenTree::Group(g) => mentions_impl(g.stream()),
        _ => false,
    })
}

fn fallback_path(path: &Path, receiver: bool) -> TokenStream {
    if receiver && path.get_ident().is_some() {
        let span = path.span();
        quote_spanned!(span=> Self::#path)
    } else {
        path.to_token_stream()
    }
}

/// The core type and the `__private` look-up for a layer.
fn primitive(layer: &Layer) -> (Ident, Ident) {
    let (ty, get) = match layer.aspect {
        Aspect::Retry => ("Retry", "retry"),
        Aspect::CircuitBreaker => ("CircuitBreaker", "circuit_breaker"),
        Aspect::RateLimiter => ("SiteRateLimiter", "rate_limiter"),
        Aspect::TimeLimiter => ("TimeLimiter", "time_limiter"),
        Aspect::Bulkhead if layer.thread_pool => ("ThreadPoolBulkhead", "thread_pool_bulkhead"),
        Aspect::Bulkhead if layer.adaptive => ("AdaptiveBulkhead", "adaptive_bulkhead"),
        Aspect::Bulkhead => ("Bulkhead", "bulkhead"),
        Aspect::Chaos => ("Chaos", "chaos"),
        Aspect::Hedge => ("Hedging", "hedging"),
        Aspect::Throttler => ("Throttler", "throttler"),
    };
    (
        Ident::new(ty, Span::call_site()),
        Ident::new(get, Span::call_site()),
    )
}

/// The innermost primitive, around the body itself (the primitive's own call).
fn innermost_call(
    krate: &TokenStream,
    layer: &Layer,
    h: &TokenStream,
    permits: &TokenStream,
    rebind: &TokenStream,
    body: &TokenStream,
    is_async: bool,
) -> TokenStream {
    let p = private(krate);
    let c = checks(krate);
    let (ty, _) = primitive(layer);
    if layer.key.is_some() {
        match (layer.aspect, is_async) {
            (Aspect::RateLimiter, true) => {
                return quote!(#p::LimiterHandle::call_async_n(#h, #permits, async move { #body }))
            }
            (Aspect::RateLimiter, false) => {
                return quote!(#p::LimiterHandle::call_n(#h, #permits, || #body))
            }
            (Aspect::Bulkhead, true) => {
                return quote!(#p::BulkheadHandle::call_async(#h, async move { #body }))
            }
            (Aspect::Bulkhead, false) => return quote!(#p::BulkheadHandle::call(#h, || #body)),
            (Aspect::Retry, true) => {
                return quote!(#p::OnBudget::call_async(#h, #[inline(always)] || { #rebind async move { #body } }))
            }
            (Aspect::Retry, false) => {
                return quote!(#p::OnBudget::call(#h, #[inline(always)] || { #rebind #body }))
            }
            _ => {} // a keyed breaker is called as a breaker
        }
    }
    if layer.aspect == Aspect::RateLimiter && layer.permits.is_some() {
        return if is_async {
            quote!(#p::SiteRateLimiter::call_async_n(#h, #permits, async move { #body }))
        } else {
            quote!(#p::SiteRateLimiter::call_n(#h, #permits, || #body))
        };
    }
    match (layer.aspect, is_async) {
        // `#[inline(always)]` on a retry's closure: the retry calls it from
        // two loops, with and without attempt spans (resil-core's
        // `Retry::run`), and each must inline it.
        (Aspect::Retry, true) => {
            quote!(#p::Retry::call_async(#h, #[inline(always)] || { #rebind async move { #body } }))
        }
        (Aspect::Retry, false) => {
            quote!(#p::Retry::call(#h, #[inline(always)] || { #rebind #body }))
        }
        (Aspect::Hedge, true) => {
            quote!(#p::Hedging::call_async(#h, |_| { #rebind async move { #body } }))
        }
        // valid.rs refuses a hedge on a sync fn.
        (Aspect::Hedge, false) => quote!(::core::compile_error!("`hedge` needs an async fn")),
        (Aspect::Bulkhead, true) if layer.thread_pool => {
            let span = layer.span;
            let work = quote_spanned!(span=> #c::pool_work(move || #body));
            quote!(#p::ThreadPoolBulkhead::call_async(#h, #work))
        }
        (_, true) => quote!(#p::#ty::call_async(#h, async move { #body })),
        (_, false) => quote!(#p::#ty::call(#h, || #body)),
    }
}

/// A primitive around an inner stack.
fn outer_call(
    krate: &TokenStream,
    layer: &Layer,
    h: &TokenStream,
    permits: &TokenStream,
    rebind: &TokenStream,
    inner: TokenStream,
    is_async: bool,
) -> TokenStream {
    let p = private(krate);
    if layer.key.is_some() {
        match (layer.aspect, is_async) {
            (Aspect::RateLimiter, true) => {
                return quote!(#p::around_keyed_rate_limiter_async(#h, #permits, #inner))
            }
            (Aspect::RateLimiter, false) => {
                return quote!(#p::around_keyed_rate_limiter(#h, #permits, || #inner))
            }
            (Aspect::Bulkhead, true) => return quote!(#p::around_keyed_bulkhead_async(#h, #inner)),
            (Aspect::Bulkhead, false) => return quote!(#p::around_keyed_bulkhead(#h, || #inner)),
            (Aspect::Retry, true) => {
                return quote!(#p::OnBudget::call_async_nested(#h, #[inline(always)] || { #rebind #inner }))
            }
            (Aspect::Retry, false) => {
                return quote!(#p::OnBudget::call_nested(#h, #[inline(always)] || { #rebind #inner }))
            }
            _ => {}
        }
    }
    if layer.aspect == Aspect::RateLimiter && layer.permits.is_some() {
        return if is_async {
            quote!(#p::around_rate_limiter_n_async(#h, #permits, #inner))
        } else {
            quote!(#p::around_rate_limiter_n(#h, #permits, || #inner))
        };
    }
    match (layer.aspect, is_async) {
        // `#[inline(always)]`: see `innermost_call`.
        (Aspect::Retry, true) => {
            quote!(#p::Retry::call_async_nested(#h, #[inline(always)] || { #rebind #inner }))
        }
        (Aspect::Retry, false) => {
            quote!(#p::Retry::call_nested(#h, #[inline(always)] || { #rebind #inner }))
        }
        (Aspect::Hedge, true) => quote!(#p::Hedging::call_async_nested(#h, |_| { #rebind #inner })),
        (Aspect::Hedge, false) => quote!(::core::compile_error!("`hedge` needs an async fn")),
        (Aspect::CircuitBreaker, true) => quote!(#p::CircuitBreaker::call_async_nested(#h, #inner)),
        (Aspect::CircuitBreaker, false) => quote!(#p::CircuitBreaker::call_nested(#h, || #inner)),
        (Aspect::Throttler, true) => quote!(#p::Throttler::call_async_nested(#h, #inner)),
        (Aspect::Throttler, false) => quote!(#p::Throttler::call_nested(#h, || #inner)),
        (Aspect::Bulkhead, true) if layer.adaptive => {
            quote!(#p::around_adaptive_bulkhead_async(#h, #inner))
        }
        (Aspect::Bulkhead, false) if layer.adaptive => {
            quote!(#p::around_adaptive_bulkhead(#h, || #inner))
        }
        (aspect, true) => {
            let f = format_ident!("around_{}_async", aspect.name());
            quote!(#p::#f(#h, #inner))
        }
        (aspect, false) => {
            let f = format_ident!("around_{}", aspect.name());
            quote!(#p::#f(#h, || #inner))
        }
    }
}
