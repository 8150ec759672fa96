//! One attribute's arguments, as written: `name = "…"`, `fallback = …`,
//! `order = [...]`, `kind = "…"` and literal config overrides. Every value keeps
//! its span so a later rule can point at the token the user typed.

use std::collections::BTreeMap;

use proc_macro2::{Span, TokenStream};
use resil_options::case::snake_case;
use resil_options::Section;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Ident, Lit, Path, Token};

use crate::diag::Errors;
use resil_options::Aspect;

/// `key = value`, before interpretation.
struct RawArg {
    key: Ident,
    value: Expr,
}

impl Parse for RawArg {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let key = Ident::parse_any(input)?;
        if !input.peek(Token![=]) {
            return Err(syn::Error::new(
                key.span(),
                format!("expected `{key} = …`: every argument is written `key = value`"),
            ));
        }
        input.parse::<Token![=]>()?;
        if let Some(cut) = path_cut_short(input) {
            let text = cut.to_string().replace(' ', "");
            return Err(syn::Error::new_spanned(
                cut,
                format!("expected a fn name after `{text}`"),
            ));
        }
        let value = input.parse()?;
        Ok(RawArg { key, value })
    }
}

/// The value's tokens when they are a path ending in `::` (`external::`),
/// which the expression parser would only call an unexpected end of input.
fn path_cut_short(input: ParseStream<'_>) -> Option<TokenStream> {
    let mut tokens = Vec::new();
    let fork = input.fork();
    while !fork.is_empty() && !fork.peek(Token![,]) {
        tokens.push(fork.parse::<proc_macro2::TokenTree>().ok()?);
    }
    let n = tokens.len();
    let colon = |t: &proc_macro2::TokenTree| matches!(t, proc_macro2::TokenTree::Punct(p) if p.as_char() == ':');
    (n >= 3 && colon(&tokens[n - 1]) && colon(&tokens[n - 2])).then(|| tokens.into_iter().collect())
}

/// The accepted argument closest to `text`, if it is close enough to be a
/// typo: the option table's one did-you-mean, which a config file's keys
/// get too.
fn closest(aspect: Aspect, text: &str) -> Option<&'static str> {
    resil_options::closest(
        text,
        COMMON
            .into_iter()
            .chain(expression_keys(aspect).iter().copied())
            .chain(override_keys(aspect)),
    )
}

/// Arguments that take an expression over the fn's arguments, per aspect.
pub(crate) fn expression_keys(aspect: Aspect) -> &'static [&'static str] {
    match aspect {
        Aspect::RateLimiter => &["key", "permits"],
        Aspect::CircuitBreaker | Aspect::Bulkhead | Aspect::Retry => &["key"],
        _ => &[],
    }
}

/// A literal config override, e.g. `max_attempts = 5`, checked in `valid.rs`.
pub(crate) struct Override {
    pub(crate) key: Ident,
    pub(crate) lit: Lit,
}

/// Which bulkhead `#[bulkhead(kind = "…")]` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BulkheadKind {
    Semaphore,
    ThreadPool,
    /// The registry's adaptive bulkhead (Vegas), `adaptive_bulkhead(name)`.
    Adaptive,
}

/// The arguments of one resil attribute.
pub(crate) struct AspectArgs {
    pub(crate) aspect: Aspect,
    /// The attribute's path (`resil::retry`), where attribute-level errors point.
    pub(crate) span: Span,
    pub(crate) name: Option<(String, Span)>,
    pub(crate) fallback: Option<(Vec<Path>, Span)>,
    /// `on = [upstream, rejected]`: the error classes the fallback list
    /// handles (checked beside `fallback` in `valid.rs`).
    pub(crate) on: Option<(Vec<Ident>, Span)>,
    pub(crate) order: Option<(Vec<Ident>, Span)>,
    /// `crate = "my_facade::resil"`: where the expansion finds resil, for
    /// crates that re-export it.
    pub(crate) krate: Option<(Path, Span)>,
    pub(crate) kind: Option<(BulkheadKind, Span)>,
    /// `criticality = <expr>`: the class the call runs with, evaluated
    /// over the fn's arguments when it is called.
    pub(crate) criticality: Option<(Expr, Span)>,
    pub(crate) overrides: Vec<Override>,
    /// `key = <expr>`: one instance per key, from the keyed family `name`.
    pub(crate) key: Option<(Expr, Span)>,
    /// `permits = <expr>`: the permits each call takes (rate limiter).
    pub(crate) permits: Option<(Expr, Span)>,
    /// The arguments could not all be read, or one looks like a misspelled
    /// `name`: a missing `name` is then not reported on top.
    pub(crate) name_unknowable: bool,
}

/// Arguments every attribute accepts.
const COMMON: [&str; 6] = ["name", "fallback", "on", "order", "crate", "criticality"];

/// Literal overrides each aspect accepts: the option table's rows an
/// attribute may set (`valid.rs` checks each literal against its row).
pub(crate) fn override_keys(aspect: Aspect) -> Vec<&'static str> {
    let mut keys = Vec::new();
    if aspect == Aspect::Bulkhead {
        keys.push("kind");
    }
    for section in sections(aspect) {
        for o in section.options() {
            // An attribute key is its option's setter (resil-options checks it).
            if o.check.is_some() && !keys.contains(&o.setter) {
                keys.push(o.setter);
            }
        }
    }
    keys
}

/// The parts of the option table an aspect's literals set: a bulkhead's are
/// the semaphore's and the thread pool's (`kind` chooses).
pub(crate) fn sections(aspect: Aspect) -> &'static [Section] {
    match aspect {
        Aspect::CircuitBreaker => &[Section::CircuitBreaker],
        Aspect::Retry => &[Section::Retry],
        Aspect::Bulkhead => &[Section::Bulkhead, Section::ThreadPoolBulkhead],
        Aspect::RateLimiter => &[Section::RateLimiter],
        Aspect::TimeLimiter => &[Section::TimeLimiter],
        // No row of these sets an attribute literal: `delay` and the rates
        // come from the file or code, chaos's switch from management.
        Aspect::Hedge => &[Section::Hedging],
        Aspect::Chaos => &[Section::Chaos],
        Aspect::Throttler => &[Section::Throttler],
    }
}

/// Puts `value` in `slot` unless the argument was already given: the one
/// duplicate check every argument goes through.
fn set_once<T>(slot: &mut Option<(T, Span)>, value: T, key: &Ident, errors: &mut Errors) {
    if slot.is_some() {
        errors.push(syn::Error::new(
            key.span(),
            format!("duplicate argument `{key}`; give it once"),
        ));
    } else {
        *slot = Some((value, key.span()));
    }
}

fn unknown_argument(aspect: Aspect, key: &Ident) -> syn::Error {
    let text = key.to_string();
    let known = |k: &str| {
        COMMON.contains(&k)
            || expression_keys(aspect).contains(&k)
            || override_keys(aspect).contains(&k)
    };
    let message = if text == "fallbackMethod" || text == "fallback_method" {
        format!("`{text}` is Resilience4j's spelling; write `fallback = your_fn` (a path, not a string)")
    } else if text == "type" && aspect == Aspect::Bulkhead {
        "`type` is Resilience4j's spelling; write `kind = \"thread_pool\"` or `kind = \"semaphore\"`".to_owned()
    } else if text != snake_case(&text) && known(&snake_case(&text)) {
        format!(
            "`{text}` is Resilience4j's spelling; write `{}`",
            snake_case(&text)
        )
    } else if let Some(close) = closest(aspect, &text) {
        format!("unknown argument `{text}` for `{aspect}`; did you mean `{close}`?")
    } else {
        let mut expected: Vec<String> = COMMON.iter().map(|k| format!("`{k}`")).collect();
        expected.extend(expression_keys(aspect).iter().map(|k| format!("`{k}`")));
        expected.extend(override_keys(aspect).iter().map(|k| format!("`{k}`")));
        format!(
            "unknown argument `{text}` for `{aspect}`; expected one of {}",
            expected.join(", ")
        )
    };
    syn::Error::new(key.span(), message)
}

fn lit_of(expr: &Expr) -> Option<&Lit> {
    match expr {
        Expr::Lit(ExprLit { lit, .. }) => Some(lit),
        Expr::Group(g) => lit_of(&g.expr),
        _ => None,
    }
}

fn path_of(expr: &Expr) -> Option<&Path> {
    match expr {
        Expr::Path(p) if p.qself.is_none() => Some(&p.path),
        Expr::Group(g) => path_of(&g.expr),
        _ => None,
    }
}

/// `[a, b]`: the idents, or the span of the first thing that is not one.
fn ident_list(value: &Expr) -> Result<Vec<Ident>, Span> {
    match value {
        Expr::Array(list) => list
            .elems
            .iter()
            .map(|e| {
                path_of(e)
                    .and_then(|p| p.get_ident().cloned())
                    .ok_or(e.span())
            })
            .collect(),
        other => Err(other.span()),
    }
}

impl AspectArgs {
    /// Reads `tokens` (what is between the attribute's parentheses), pushing
    /// every problem to `errors` and keeping what could be read.
    pub(crate) fn parse(
        aspect: Aspect,
        span: Span,
        tokens: TokenStream,
        errors: &mut Errors,
    ) -> AspectArgs {
        let mut args = AspectArgs {
            aspect,
            span,
            name: None,
            fallback: None,
            on: None,
            order: None,
            krate: None,
            kind: None,
            criticality: None,
            overrides: Vec::new(),
            key: None,
            permits: None,
            name_unknowable: false,
        };
        let raw = match Punctuated::<RawArg, Token![,]>::parse_terminated.parse2(tokens) {
            Ok(raw) => raw,
            Err(e) => {
                errors.push(e);
                args.name_unknowable = true;
                return args;
            }
        };
        let mut seen_overrides: BTreeMap<String, Option<((), Span)>> = BTreeMap::new();
        for RawArg { key, value } in raw {
            match key.to_string().as_str() {
                "name" => match lit_of(&value) {
                    Some(Lit::Str(s)) => set_once(&mut args.name, s.value(), &key, errors),
                    _ => errors.push(syn::Error::new(
                        value.span(),
                        "`name` takes a string literal: `name = \"inventory-query\"`",
                    )),
                },
                "fallback" => {
                    let paths = match &value {
                        Expr::Array(list) => list
                            .elems
                            .iter()
                            .map(|e| path_of(e).cloned().ok_or(e.span()))
                            .collect::<Result<Vec<_>, _>>(),
                        other => path_of(other).cloned().map(|p| vec![p]).ok_or(other.span()),
                    };
                    match paths {
                        Ok(paths) => set_once(&mut args.fallback, paths, &key, errors),
                        Err(at) => errors.push(syn::Error::new(
                            at,
                            "`fallback` takes a fn path or a list of them: `fallback = cached_price` or `fallback = [on_timeout, on_error]`",
                        )),
                    }
                }
                "on" => match ident_list(&value) {
                    Ok(idents) => set_once(&mut args.on, idents, &key, errors),
                    Err(at) => errors.push(syn::Error::new(
                        at,
                        "`on` takes a list of error classes: `on = [upstream, rejected]` (the `#[derive(ErrorClass)]` names of the fn's error type, `rejected` for every refusal, or one refusal such as `timeout`)",
                    )),
                },
                "crate" => match lit_of(&value) {
                    Some(Lit::Str(s)) => match s.parse::<Path>() {
                        Ok(path) => set_once(&mut args.krate, path, &key, errors),
                        Err(_) => errors.push(syn::Error::new(
                            s.span(),
                            "`crate` takes the path resil is re-exported at: `crate = \"my_facade::resil\"`",
                        )),
                    },
                    _ => errors.push(syn::Error::new(
                        value.span(),
                        "`crate` takes a string literal: `crate = \"my_facade::resil\"`",
                    )),
                },
                "criticality" => set_once(&mut args.criticality, value, &key, errors),
                "order" => {
                    match ident_list(&value) {
                        Ok(idents) => set_once(&mut args.order, idents, &key, errors),
                        Err(at) => errors.push(syn::Error::new(
                            at,
                            "`order` takes a list of attribute names, outermost first: `order = [circuit_breaker, retry]`",
                        )),
                    }
                }
                "key" if expression_keys(aspect).contains(&"key") => {
                    set_once(&mut args.key, value, &key, errors)
                }
                "permits" if expression_keys(aspect).contains(&"permits") => {
                    set_once(&mut args.permits, value, &key, errors)
                }
                "kind" if aspect == Aspect::Bulkhead => match lit_of(&value) {
                    Some(Lit::Str(s)) if s.value() == "semaphore" => {
                        set_once(&mut args.kind, BulkheadKind::Semaphore, &key, errors)
                    }
                    Some(Lit::Str(s)) if s.value() == "thread_pool" => {
                        set_once(&mut args.kind, BulkheadKind::ThreadPool, &key, errors)
                    }
                    Some(Lit::Str(s)) if s.value() == "adaptive" => {
                        set_once(&mut args.kind, BulkheadKind::Adaptive, &key, errors)
                    }
                    _ => errors.push(syn::Error::new(
                        value.span(),
                        "`kind` is `\"semaphore\"` (the default), `\"thread_pool\"` or `\"adaptive\"`",
                    )),
                },
                other if override_keys(aspect).contains(&other) => {
                    let slot = seen_overrides.entry(other.to_owned()).or_default();
                    let first = slot.is_none();
                    set_once(slot, (), &key, errors);
                    if !first {
                        continue;
                    }
                    match lit_of(&value) {
                        Some(lit) => args.overrides.push(Override {
                            key,
                            lit: lit.clone(),
                        }),
                        None => errors.push(syn::Error::new(
                            value.span(),
                            format!("`{key}` takes a literal, checked at compile time; set computed values in a config file or with `resil::registry().configure_{aspect}(…)`"),
                        )),
                    }
                }
                unknown => {
                    if closest(aspect, unknown) == Some("name") {
                        args.name_unknowable = true;
                    }
                    errors.push(unknown_argument(aspect, &key))
                }
            }
        }
        args
    }
}

#[cfg(test)]
mod tests {
    use resil::config::FileConfig;

    use super::*;

    /// The suggestion a message makes: what follows "did you mean".
    fn suggestion(message: &str) -> Option<&str> {
        message.split("did you mean `").nth(1)?.split('`').next()
    }

    #[test]
    fn a_typo_gets_the_same_suggestion_in_an_attribute_and_in_a_file() {
        for (aspect, kind, typo) in [
            (
                Aspect::CircuitBreaker,
                "circuitbreaker",
                "failure_rate_treshold",
            ),
            (
                Aspect::CircuitBreaker,
                "circuitbreaker",
                "slidng_window_size",
            ),
            (
                Aspect::CircuitBreaker,
                "circuitbreaker",
                "slow_call_rate_threshhold",
            ),
            (Aspect::Retry, "retry", "max_atempts"),
            (Aspect::Retry, "retry", "wait_durration"),
            (Aspect::Bulkhead, "bulkhead", "max_concurent_calls"),
            (Aspect::RateLimiter, "ratelimiter", "limit_for_perod"),
            (Aspect::TimeLimiter, "timelimiter", "timeout_duraton"),
        ] {
            let attr = unknown_argument(aspect, &Ident::new(typo, Span::call_site())).to_string();
            let key = typo.replace('_', "-");
            let file = FileConfig::from_yaml_str(&format!(
                "resilience4j:\n  {kind}:\n    instances:\n      a:\n        {key}: 1\n"
            ))
            .expect_err("an unknown key is refused")
            .to_string();
            let in_attr = suggestion(&attr).unwrap_or_else(|| panic!("no suggestion: {attr}"));
            let in_file = suggestion(&file).unwrap_or_else(|| panic!("no suggestion: {file}"));
            assert_eq!(in_attr.replace('_', "-"), in_file, "{attr}\n{file}");
        }
    }

    #[test]
    fn a_misspelled_common_argument_is_suggested_for_every_aspect() {
        for aspect in resil_options::ORDER {
            for (typo, want) in [("nmae", "name"), ("fallbak", "fallback"), ("oder", "order")] {
                assert_eq!(closest(aspect, typo), Some(want), "{aspect}: {typo}");
            }
        }
    }
}
