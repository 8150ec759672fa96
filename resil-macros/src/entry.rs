//! The pipeline, as thiserror's `try_expand`: parse → model → validate →
//! expand, and when anything is wrong, the user's fn unchanged plus every
//! error (see `fallback.rs`).

use proc_macro2::TokenStream;

use crate::diag::Errors;
use crate::expand::expand as codegen;
use crate::fallback;
use crate::item::ItemFn;
use crate::model::Model;
use crate::order::Aspect;

pub(crate) fn expand(aspect: Aspect, args: TokenStream, input: TokenStream) -> TokenStream {
    let item: ItemFn = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(e) => return fallback::with_error(input, e),
    };
    let mut errors = Errors::new();
    let model = Model::from_syn(aspect, args, item, &mut errors);
    let plan = model.validate(&mut errors);
    match (errors.finish(), plan) {
        (Ok(()), Some(plan)) => codegen(plan),
        (Err(e), _) => fallback::with_error(input, e),
        (Ok(()), None) => unreachable!("validate returns no plan only after reporting an error"),
    }
}
